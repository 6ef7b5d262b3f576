import { hash } from 'node:crypto'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

// Strong entity tags: a hash of exactly the bytes of the representation the response sends, so
// a tag changes exactly when the representation does (author renames included) with no version
// column to keep in step, and a tag never carries anything the response does not show: whoever
// can compute it already holds every input. (A tag over hidden data, such as a public user's tag
// over the private e-mail, would let anyone test guesses of that data offline or with
// If-None-Match.) SHA-1 because the tag needs no secrecy, only to change with the bytes; node's
// one-shot `hash()` spares the Hash object of createHash on every request.
//
// The representation is serialised once, by the serializer Fastify compiles from its named
// schema (fast-json-stringify, compiled once per route and kept), and those very bytes are both
// hashed and sent: the tag costs one hash, not a second serialisation (docs/decisions.md, Performance). A
// tag that is only compared (If-Match on a write) is computed the same way, so it equals the tag
// a GET sent for the same representation.

const JSON_TYPE = 'application/json; charset=utf-8'

// One reference object per named schema: Fastify keeps a compiled serializer per route and per
// schema object, so the object must be the same on every request.
const references = new WeakMap<TSchema, TSchema>()

function reference (schema: TSchema): TSchema {
  let ref = references.get(schema)
  if (ref === undefined) {
    if (schema.$id === undefined) throw new Error('a tagged representation needs a named schema')
    ref = { $ref: schema.$id } as unknown as TSchema
    references.set(schema, ref)
  }
  return ref
}

/** The representation as the response writes it: JSON by its named schema. */
function serialize (reply: FastifyReply, schema: TSchema, representation: unknown): string {
  return reply.compileSerializationSchema(reference(schema))(representation as Record<string, unknown>)
}

export function tagOf (json: string): string {
  return `"${hash('sha1', json, 'base64url')}"`
}

/** The tag a response showing this representation (by its named schema) carries. */
export function etagOf (reply: FastifyReply, schema: TSchema, representation: unknown): string {
  return tagOf(serialize(reply, schema, representation))
}

function listedTags (header: string): string[] {
  return header.split(',').map((t) => t.trim()).filter((t) => t !== '')
}

/** Whether an If-None-Match header names this tag (or `*`): the answer is then 304. */
export function noneMatch (header: string | string[] | undefined, etag: string): boolean {
  if (typeof header !== 'string') return false
  // If-None-Match uses weak comparison (RFC 9110 13.1.2): W/"x" matches "x".
  return listedTags(header).some((t) => t === '*' || t.replace(/^W\//, '') === etag)
}

/** Sets ETag; true when If-None-Match matches and a 304 has been sent instead. */
function sendIfNoneMatch (request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag)
  const matches = noneMatch(request.headers['if-none-match'], etag)
  if (matches) void reply.code(304).send()
  return matches
}

/** A single-resource GET: the representation with the strong ETag of exactly it, or 304 when If-None-Match matches. */
export async function sendTagged (request: FastifyRequest, reply: FastifyReply, schema: TSchema, representation: unknown): Promise<FastifyReply> {
  const json = serialize(reply, schema, representation)
  if (sendIfNoneMatch(request, reply, tagOf(json))) return reply
  return await reply.type(JSON_TYPE).send(json)
}

/** The answer to a write that shows the resource (200, 201): the representation and its ETag. */
export async function sendWithTag (reply: FastifyReply, schema: TSchema, representation: unknown): Promise<FastifyReply> {
  const json = serialize(reply, schema, representation)
  return await reply.header('etag', tagOf(json)).type(JSON_TYPE).send(json)
}

/** PUT, PATCH, DELETE: a stale If-Match is 412 and nothing changes. Strong comparison. */
export function checkIfMatch (request: FastifyRequest, etag: string): void {
  const header = request.headers['if-match']
  if (typeof header !== 'string') return
  const matches = listedTags(header).some((t) => t === '*' || t === etag)
  if (!matches) throw new ApiError('PRECONDITION_FAILED')
}
