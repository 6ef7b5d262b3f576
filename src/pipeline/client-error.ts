import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { catalogue, type ErrorCode } from '../http/errors.js'
import { endLingering, lingering } from './lingering-close.js'

// node:http as CommonJS gives it, not as an ES module: the module namespace of an `import` reads
// every export, and `WebSocket` among them loads the runtime's bundled undici (about 2.3 MiB of
// heap and 13 MiB resident), which the service never uses. (metrics-listener.ts does the same.)
const { STATUS_CODES } = process.getBuiltinModule('node:http')

// The longest request line we answer 431 rather than 414 for: a request whose first line alone
// fills the header limit is a URL too long, not too many headers.
const LONG_REQUEST_LINE = 8192

type ClientError = Error & { code?: string, rawPacket?: unknown }

function codeFor (error: ClientError): ErrorCode {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT'
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket : undefined
    const lineEnd = packet === undefined ? -1 : packet.indexOf('\r\n')
    const startsRequest = packet !== undefined && /^[A-Z]+ /.test(packet.subarray(0, 16).toString('latin1'))
    return startsRequest && (lineEnd === -1 || lineEnd > LONG_REQUEST_LINE) ? 'URI_TOO_LONG' : 'HEADERS_TOO_LARGE'
  }
  return 'MALFORMED_REQUEST'
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP layer meets before (or instead of) a request
 * the app can see: the request line and headers, or the whole request, not received in time
 * (408), bytes that are not HTTP (400), a request line or headers over the size limit (414,
 * 431). They are answered in the same problem body as every other error, on the raw socket
 * (there is no reply object), and the connection is closed, lingering (lingering-close.ts): its
 * state is unknown, but the client may still be sending.
 */
export function clientErrorHandler (this: FastifyInstance, error: ClientError, socket: Socket): void {
  // A reset connection has no one to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // Answered already: the parser fails again on each further chunk the client sends while the
  // connection lingers, and those bytes are only to be discarded.
  if (lingering(socket)) return
  const code = codeFor(error)
  const entry = catalogue[code]
  const requestId = randomUUID()
  this.log.info({ err: error, requestId, code }, 'client error')
  // An answer already on its way (headers sent) cannot be replaced: only close.
  const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (socket.writable && response?.headersSent !== true) {
    const body = JSON.stringify({
      type: `/errors/${code}`, title: entry.title, status: entry.status, code, message: entry.message, requestId
    })
    endLingering(socket, `HTTP/1.1 ${entry.status} ${STATUS_CODES[entry.status] ?? ''}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'X-Content-Type-Options: nosniff\r\n' +
      'Connection: close\r\n\r\n' + body)
    return
  }
  socket.destroy()
}
