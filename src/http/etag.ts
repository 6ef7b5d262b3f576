import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

// Strong entity tags: a hash of exactly the representation the response shows, so a tag changes
// exactly when the representation does (author renames included) with no version column to keep
// in step, and a tag never carries anything the response does not show: whoever can compute it
// already holds every input. (A tag over hidden data, such as a public user's tag over the
// private e-mail, would let anyone test guesses of that data offline or with If-None-Match.)
// SHA-1 because the tag needs no secrecy, only to change with the bytes; node's one-shot
// `hash()` spares the Hash object of createHash on every request.
export function etagOf (representation: unknown): string {
  const json = JSON.stringify(representation, (_key, value: unknown) => typeof value === 'bigint' ? value.toString() : value)
  return `"${hash('sha1', json, 'base64url')}"`
}

function listedTags (header: string): string[] {
  return header.split(',').map((t) => t.trim()).filter((t) => t !== '')
}

/** Sets ETag; true when If-None-Match matches and a 304 has been sent instead. */
function sendIfNoneMatch (request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag)
  const header = request.headers['if-none-match']
  if (typeof header !== 'string') return false
  // If-None-Match uses weak comparison (RFC 9110 13.1.2): W/"x" matches "x".
  const matches = listedTags(header).some((t) => t === '*' || t.replace(/^W\//, '') === etag)
  if (matches) void reply.code(304).send()
  return matches
}

/** A single-resource GET: the representation with the strong ETag of exactly it, or 304 when If-None-Match matches. */
export async function sendTagged (request: FastifyRequest, reply: FastifyReply, representation: unknown): Promise<FastifyReply> {
  if (sendIfNoneMatch(request, reply, etagOf(representation))) return reply
  return await reply.send(representation)
}

/** PUT, PATCH, DELETE: a stale If-Match is 412 and nothing changes. Strong comparison. */
export function checkIfMatch (request: FastifyRequest, etag: string): void {
  const header = request.headers['if-match']
  if (typeof header !== 'string') return
  const matches = listedTags(header).some((t) => t === '*' || t === etag)
  if (!matches) throw new ApiError('PRECONDITION_FAILED')
}
