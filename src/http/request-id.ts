import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'

// A client's own X-Request-Id is kept when it is sane (1 to 128 printable ASCII characters),
// so that a request can be followed across systems; otherwise one is made.
const SANE = /^[\x20-\x7e]{1,128}$/

export function genReqId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && SANE.test(given) ? given : randomUUID()
}

/**
 * Every response carries X-Request-Id, equal to the `requestId` of an error body. Registered
 * first: its onRequest hook runs before any other hook can answer early.
 */
export const requestId = fp(async (app) => {
  // The hooks that run on every request are synchronous callback hooks: an async hook costs a
  // promise and a microtask per request for nothing (docs/decisions.md, Performance).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}, { name: 'request-id' })
