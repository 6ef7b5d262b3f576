import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

// One log line per request, written once the answer has gone out, with everything needed to
// follow it: the request id (bound to request.log), method, URL, route pattern, status, time and
// client address. Fastify's default writes two lines at info per request, one on arrival, when
// nothing is known yet; at a few thousand requests a second the second line was a measurable
// part of the cost (docs/decisions.md, Performance). The arrival is still logged, at debug (at info pino
// makes that call a no-op). This is Fastify's own hook for request logging (its LogController),
// so no extra request hook runs; every other log line (errors, not-found) stays Fastify's.
export class RequestLog extends LogController {
  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: request.url }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
      remoteAddress: request.ip
    }
    if (error !== null && error !== undefined) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}
