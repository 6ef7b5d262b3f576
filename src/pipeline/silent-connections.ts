import type { Socket } from 'node:net'
import fp from 'fastify-plugin'

// A connection that sends nothing is answered 408 once the header limit (headersTimeout) has
// passed, as Node itself does, but also once the server is closing. Node stops its periodic
// check of the limits when `server.close()` is called, and `close()` ends only connections it
// counts idle, which a connection still waiting for its first request is not: such a connection
// (a client that connected ahead of need, as some pools do) would keep a shutdown waiting until
// the 60 s socket timeout. So each connection is checked once, a second after the header
// limit: one that has still read nothing is given Node's own timeout error, which the
// client-error handler answers (408, then the connection closes).

/** How long after the header limit a silent connection is checked (Node checks every second too). */
const SLACK_MS = 1000

export const silentConnections = fp(async (app) => {
  const server = app.server
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      if (socket.bytesRead > 0 || socket.destroyed) return
      socket.emit('error', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }))
    }, server.headersTimeout + SLACK_MS)
    timer.unref()
    socket.once('close', () => { clearTimeout(timer) })
  })
}, { name: 'silent-connections' })
