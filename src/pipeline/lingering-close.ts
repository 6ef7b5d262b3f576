import type { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'

// A lingering close, as Apache and nginx do it: when the server closes a connection while the
// client is still sending (an answer given before the request body was read: 413, 401, 415,
// 404, 429, 503, a malformed request), it must not close at once. A socket closed with unread
// bytes in its receive buffer makes the kernel send a reset instead of a FIN, and a reset that
// reaches the client before it has read the answer destroys that answer: the client's write
// fails (EPIPE, ECONNRESET) and it never sees the status it could have acted on.
//
// So the server sends its answer, half-closes (FIN: the client's reader sees the answer end),
// and keeps reading and discarding what the client still sends, until the client stops (the
// body ends or the client closes). Bounds: it discards at most LINGER_BYTES, then stops reading
// (the client's writes wait on full buffers; nothing is held in the process; a connection whose
// parser failed is destroyed instead), and it destroys the socket LINGER_MS after the answer at
// the latest, reading or not. A client that keeps
// sending forever is cut off by them; a fast client has had the whole time to read the answer.

/** How long a closing connection waits for the client to stop sending. */
export const LINGER_MS = 2000
/** How many more bytes a closing connection reads and discards before it stops reading. */
export const LINGER_BYTES = 4 * 1024 * 1024

// Node's own close: end, then destroy once what is queued has been written.
const destroySoon = Socket.prototype.destroySoon
/** The latest request of each connection whose answer came before its body was read. */
const requests = new WeakMap<Socket, IncomingMessage>()
const closing = new WeakSet<Socket>()

/** Whether the socket is in its lingering close: answered, half-closed, discarding what still comes. */
export function lingering (socket: Socket): boolean {
  return closing.has(socket)
}

/**
 * Arms a lingering close for the connection of a request whose body is not fully read: should
 * Node close the connection after the answer (it calls `destroySoon` on a response with
 * `Connection: close`), the socket half-closes and discards the rest of the body, within the
 * bounds, instead of being destroyed at once.
 */
export function lingerIfClosed (request: IncomingMessage): void {
  const socket = request.socket as Socket | null
  if (socket === null) return
  requests.set(socket, request)
  socket.destroySoon = lingeringClose
  // Read the rest of the body here, counting it, rather than let Node dump it uncounted: every
  // byte still sent reaches this listener and is dropped.
  let bytes = 0
  request.on('data', (chunk: Buffer) => {
    bytes += chunk.length
    // Pausing the request stream stops the parser and, through it, the socket's reads.
    if (bytes > LINGER_BYTES) request.pause()
  })
  // A request paused when its body was refused (error-handler.ts) flows again, into this count.
  request.resume()
}

function lingeringClose (this: Socket): void {
  const request = requests.get(this)
  // Nothing left unread (this answer's request came whole, or a later one on the connection
  // did): Node's own close sends a FIN, not a reset.
  if (request === undefined || request.complete) {
    destroySoon.call(this)
    return
  }
  request.once('end', linger(this))
}

/**
 * The same for a connection answered on the raw socket, where there is no request stream (an
 * answer of the HTTP layer itself: a malformed request, headers too large, a time limit).
 */
export function endLingering (socket: Socket, answer: string): void {
  socket.end(answer)
  const stop = linger(socket)
  // The failed HTTP parser still owns the socket's reads (it consumes the handle directly: no
  // 'data' event, and pausing the socket does not stop it); bytesRead counts them, and past the
  // bound the socket is closed rather than paused.
  const start = socket.bytesRead
  const meter = setInterval(() => { if (socket.bytesRead - start > LINGER_BYTES) stop() }, 50)
  socket.once('close', () => { clearInterval(meter) })
  socket.on('data', () => {})
  socket.resume()
}

/**
 * Half-closes the socket (after what is queued is written) and destroys it LINGER_MS later at
 * the latest; sooner when the client closes its side or the returned function is called, once
 * the answer has been written.
 */
function linger (socket: Socket): () => void {
  closing.add(socket)
  if (socket.writable) socket.end()
  const timer = setTimeout(() => { socket.destroy() }, LINGER_MS)
  const stop = (): void => {
    clearTimeout(timer)
    destroySoon.call(socket)
  }
  socket.once('end', stop)
  socket.once('close', () => { clearTimeout(timer) })
  return stop
}
