import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

// One log line per request, written once the answer has gone out, with everything needed to
// follow it: the request id (bound to request.log), method, URL, route pattern, status, time and
// client address. Fastify's own request logging (disabled in app.ts) writes two lines per
// request, one of them before anything is known about the answer; at a few thousand requests a
// second the second line was a measurable part of the cost (docs/PERFORMANCE.md).
// The hooks take callbacks rather than being async: no promise per request.
async function requestLog (app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
      remoteAddress: request.ip
    }, 'request completed')
    done()
  })
  // The arrival too, but only when debug logging is on: at info the hook is not even added.
  if (app.log.level === 'debug' || app.log.level === 'trace') {
    app.addHook('onRequest', (request, _reply, done) => {
      request.log.debug({ method: request.method, url: request.url }, 'incoming request')
      done()
    })
  }
}

export default fp(requestLog, { name: 'request-log', fastify: '5.x' })
