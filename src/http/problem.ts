import type { FastifyReply, FastifyRequest } from 'fastify'
import { catalogue, type ApiError } from './errors.js'

// Writes an ApiError as the contract's error body, which is also an RFC 9457 problem object.
export function sendProblem (request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  const entry = catalogue[error.code]
  const accept = request.headers.accept ?? ''
  const type = /application\/problem\+json/i.test(accept) ? 'application/problem+json' : 'application/json'
  const body = {
    type: `/errors/${error.code}`,
    title: entry.title,
    status: entry.status,
    code: error.code,
    message: error.message,
    requestId: request.id,
    ...(error.errors !== undefined ? { errors: error.errors } : {})
  }
  return reply
    .code(entry.status)
    .headers(error.headers)
    .type(`${type}; charset=utf-8`)
    // Serialised here rather than by the route's response schema, so that the error body is
    // the same whichever route (or no route) produced it.
    .serializer(JSON.stringify)
    .send(body)
}
