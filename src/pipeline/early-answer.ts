import type { FastifyReply, FastifyRequest } from 'fastify'
import { lingerIfClosed } from './lingering-close.js'

/** A request body with at most this many bytes declared is read and discarded after an early answer, and its connection kept. */
export const DISCARD_BYTES = 64 * 1024

/**
 * Answers given before the request body was read (413, 401, 415, 404, 405, 429, 503, a 400 on a
 * header) reach the client. A small body (Content-Length up to DISCARD_BYTES) is cheaper to
 * read than to refuse: Node reads and discards it after the answer and the connection stays
 * open. A larger one, or one of unknown length (chunked), is not read: the answer says
 * `Connection: close` and the connection closes lingering (lingering-close.ts), so the client's
 * writes do not fail before it has read the answer. The same applies whenever some other part
 * (the body parser after a refused body, the shutdown) closes a connection whose body is unread.
 * The request path's step for every answer (request-hooks.ts).
 */
export function answerBeforeBody (request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw
  if (raw.complete) return
  lingerIfClosed(raw)
  const declared = Number(raw.headers['content-length'])
  if (!(declared <= DISCARD_BYTES)) reply.header('connection', 'close')
}
