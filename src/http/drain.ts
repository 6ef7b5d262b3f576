import fp from 'fastify-plugin'
import { serviceUnavailable } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shutdown's first phase (see server.ts): readiness fails, every answer closes its connection. */
    drain: { readonly draining: boolean, begin: () => void, refuse: () => void }
  }
}

/**
 * Shutdown in two phases, so that a load balancer can take the instance out before it stops:
 *
 * 1. Draining (`app.drain.begin()`): `/health/ready` answers 503 at once, requests are still
 *    served, but every response says `Connection: close`, so keep-alive clients reconnect (through
 *    the balancer, elsewhere) instead of sending on a connection that is about to close.
 * 2. Refusing (`app.drain.refuse()`, then `app.close()`): every new request gets 503 with
 *    `Retry-After` and `Connection: close`, a cheap answer, so the requests that are already on
 *    their way are read and answered while the listener is still open; then `app.close()` stops
 *    accepting and lets in-flight requests finish. Node closes idle connections at that moment,
 *    and a request whose bytes are in flight on one is reset: cheap answers keep that window
 *    short (the unavoidable race, measured in docs/RELIABILITY.md).
 */
export const drain = fp(async (app) => {
  let draining = false
  let closing = false
  app.decorate('drain', {
    get draining () { return draining || closing },
    // Idle keep-alive connections are left open: closing one now would reset a request the
    // client is writing onto it; its next request is answered and closes it instead.
    begin () { draining = true },
    refuse () { closing = true }
  })
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? serviceUnavailable({ message: 'The server is shutting down.', headers: { connection: 'close' } }) : undefined)
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining || closing) reply.header('connection', 'close')
    done(null, payload)
  })
  app.addHook('preClose', async () => { closing = true })
}, { name: 'drain', dependencies: ['request-id', 'error-handler'] })
