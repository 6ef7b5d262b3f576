import fp from 'fastify-plugin'
import { serviceUnavailable } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shutdown's first phase (see server.ts): readiness fails, every answer closes its connection. */
    drain: { readonly draining: boolean, begin: () => void }
  }
}

/**
 * Shutdown in two phases, so that a load balancer can take the instance out before it stops:
 *
 * 1. Draining (`app.drain.begin()`): `/health/ready` answers 503 at once, requests are still
 *    served, but every response says `Connection: close`, so keep-alive clients reconnect (through
 *    the balancer, elsewhere) instead of sending on a connection that is about to close.
 * 2. Closing (`app.close()`): no new connections; a request that still arrives on an open one
 *    gets 503 with `Retry-After` and `Connection: close`; in-flight requests finish.
 */
export const drain = fp(async (app) => {
  let draining = false
  let closing = false
  app.decorate('drain', {
    get draining () { return draining || closing },
    begin () {
      draining = true
      // Idle keep-alive connections are closed now, while new ones are still accepted, so
      // their clients reconnect rather than meet the listener closing later.
      app.server.closeIdleConnections()
    }
  })
  app.addHook('onRequest', async () => {
    if (closing) throw serviceUnavailable({ message: 'The server is shutting down.', headers: { connection: 'close' } })
  })
  app.addHook('onSend', async (_request, reply) => {
    if (draining || closing) void reply.header('connection', 'close')
  })
  app.addHook('preClose', async () => { closing = true })
}, { name: 'drain', dependencies: ['request-id', 'error-handler'] })
