import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { serviceUnavailable, type ApiError } from '../http/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The shutdown's phases before `close()` (see server.ts and below). */
    drain: Drain
  }
}

export interface Drain {
  /** From `begin()` on: every answer says `Connection: close`. */
  readonly draining: boolean
  /** From `hold()` on: a new request waits for `released` before it is served. */
  readonly holding: boolean
  /** From the listener's closing on: a new request is answered 503. */
  readonly closing: boolean
  /** Settles when the held requests may go on (the listener has closed). */
  readonly released: Promise<void>
  begin: () => void
  hold: () => Promise<void>
  onBegin: (listener: () => void) => void
}

/** Connections must have stopped arriving for this long before the listener closes. */
export const QUIET_MS = 50
/** The longest the listener stays open once holding has begun, quiet or not. */
export const HOLD_MAX_MS = 1000

/**
 * Shutdown in phases, so that no client is reset, whether it comes through a balancer or not:
 *
 * 1. Draining (`begin()`): `/health/ready` answers 503 at once, requests are still served, but
 *    every response says `Connection: close`, so keep-alive clients reconnect (through the
 *    balancer, elsewhere) instead of sending on a connection that is about to close. Idle
 *    keep-alive connections are left open: closing one now would reset a request the client is
 *    writing onto it; its next request is answered and closes it instead.
 * 2. Holding (`hold()`): a new request waits, unanswered, instead of being served. A client whose
 *    request waits opens no new connection, so connections stop arriving; once none has arrived
 *    for QUIET_MS and each that arrived since draining began has delivered its request
 *    (HOLD_MAX_MS at most), `hold()` resolves. Closing the listener while clients still connect
 *    would reset every connection the kernel accepted that Node had not yet taken, and closing a
 *    connection whose request has not been read yet would reset it too: those races are what
 *    this phase removes.
 * 3. Closing (`close()`): the listener closes (a client that connects now is refused, which it can
 *    tell from a reset: nothing was sent), Node closes the connections idle at that moment, and
 *    then the held requests are served, each answer closing its connection. A request that still
 *    arrives on an open connection is answered 503 with `Retry-After`. `close()` resolves when
 *    every connection has ended.
 *
 * The phases are kept here; the request path (request-hooks.ts) holds, refuses and closes by them.
 */
export const drain = fp(async (app) => {
  let draining = false
  let holding = false
  let closing = false
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })

  // Connections that arrived since draining began and have not yet delivered a request: closing
  // now would take each for idle and close it under the request its client is sending.
  const unasked = new Set<Socket>()
  let last = 0
  const arrived = (socket: Socket): void => {
    last = Date.now()
    unasked.add(socket)
    socket.once('close', () => { unasked.delete(socket) })
  }
  const asked = (request: IncomingMessage): void => { unasked.delete(request.socket) }

  const beginning: Array<() => void> = []
  app.decorate('drain', {
    get draining () { return draining || holding || closing },
    get holding () { return holding },
    get closing () { return closing },
    released,
    begin () {
      draining = true
      // Every connection from now on is followed until it delivers its request: one accepted
      // while draining whose client is slow to write (a busy client machine) must be waited for
      // by hold() as much as one accepted while holding, or closing takes it for idle.
      app.server.on('connection', arrived)
      app.server.on('request', asked)
      for (const listener of beginning) listener()
    },
    onBegin (listener: () => void) { beginning.push(listener) },
    async hold () {
      holding = true
      app.log.info('holding: new requests wait until connections stop arriving')
      const started = Date.now()
      last = started
      const quiet = (): boolean => Date.now() - last >= QUIET_MS && unasked.size === 0
      while (Date.now() - started < HOLD_MAX_MS) {
        // Quiet by the clock is not enough: a process that was not scheduled for a while (a busy
        // machine) sees the time pass before it takes the connections and requests the kernel
        // has queued for it meanwhile, which the next poll of the event loop does. So quiet is
        // judged again after one (setImmediate runs right after it).
        if (quiet()) {
          await new Promise((resolve) => { setImmediate(resolve) })
          if (quiet()) break
        }
        await sleep(5)
      }
      app.server.off('connection', arrived)
      app.server.off('request', asked)
    }
  })
  app.addHook('preClose', async () => {
    closing = true
    if (!holding) return
    // Fastify closes the listener right after its preClose hooks; the held requests go on once it has.
    void (async () => {
      while (app.server.listening) await sleep(1)
      release()
    })()
  })
}, { name: 'drain', dependencies: ['error-handler'] })

/** The answer to a request that arrives once the listener is closing. */
export function shuttingDown (): ApiError {
  return serviceUnavailable({ message: 'The server is shutting down.', headers: { connection: 'close' } })
}
