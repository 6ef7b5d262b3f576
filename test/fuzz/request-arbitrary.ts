import sharp from 'sharp'
import fc from 'fast-check'
import { ADMIN_SCOPES, SCOPES } from '../../src/auth/scopes.js'
import { FUZZ_PROVIDER, FUZZ_REDIRECT, type RawRequest } from './fuzz-app.js'
import { Slot, SLOTS, type World, type Who } from './fuzz-world.js'
import type { Operation, Parameter, Schema } from './openapi-operations.js'
import { idString, PROVIDER_PATTERN, validArbitrary, type MemberHint } from './schema-arbitrary.js'

// Requests generated from an operation's parameters and body schema. Ids are mostly the
// world's real ones (by slot), sometimes random; e-mails and passwords at log-in are sometimes
// real ones, so that the generated requests reach the success paths, not only the 404s.

export interface GeneratedRequest {
  /** The operation, `METHOD /path` (a key rather than the operation, so failures print short). */
  key: string
  path: Record<string, unknown>
  query: Record<string, unknown>
  headers: Record<string, unknown>
  /** Whose token goes in Authorization (undefined: none). */
  who: Who | undefined
  contentType: string | undefined
  /** The JSON body (undefined: no body). */
  body: unknown
}

const ID_SLOTS = [...SLOTS.userId, ...SLOTS.postId, ...SLOTS.productId, ...SLOTS.orderId, ...SLOTS.endpointId, ...SLOTS.deliveryId]

function pathIdSlots (path: string): Slot[] {
  if (path.startsWith('/v1/users/')) return SLOTS.userId
  if (path.startsWith('/v1/posts/')) return SLOTS.postId
  if (path.startsWith('/v1/products/')) return SLOTS.productId
  if (path.startsWith('/v1/orders/')) return SLOTS.orderId
  if (path.startsWith('/v1/webhook-endpoints/')) return SLOTS.endpointId
  return ID_SLOTS
}

/** A real id of the addressed kind (mostly), of another kind, or a random one. */
function idFor (slots: Slot[], random: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...slots) }, { weight: 1, arbitrary: fc.constantFrom(...ID_SLOTS) }, { weight: 1, arbitrary: random })
}

/** Header values must be visible ASCII: a plain string header gets a tag-like value. */
const headerText = fc.oneof(fc.constantFrom('*', '"abc"', 'W/"abc"', '"0123456789abcdef"'), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }).map((s) => s.trim()).filter((s) => s !== ''))

export const bodyHints: MemberHint = (name, schema) => {
  if (name === 'productId' && schema.type === 'integer') return idFor(SLOTS.productId, validArbitrary(schema))
  const real = (slots: Slot[]) => fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...slots) }, { weight: 1, arbitrary: validArbitrary(schema) })
  if (name === 'email' && schema.format === undefined) return real(SLOTS.email)
  if ((name === 'password' || name === 'currentPassword') && schema.minLength === undefined) return real(SLOTS.password)
  // An API key's expiry is in the future; its scopes are each listed once, and products:write
  // is an administrator's only (the document says both in words).
  // The provider and page the fuzz app is configured with (any other is a field's failure).
  if (name === 'provider' && schema.pattern === PROVIDER_PATTERN) return fc.constant(FUZZ_PROVIDER)
  if (name === 'redirectUri') return fc.constant(FUZZ_REDIRECT)
  if (name === 'expiresAt') return fc.date({ noInvalidDate: true, min: new Date(Date.now() + 3_600_000), max: new Date(4102444800000) }).map((d) => d.toISOString())
  if (name === 'scopes' && schema.type === 'array') return fc.uniqueArray(fc.constantFrom(...SCOPES.filter((scope) => !ADMIN_SCOPES.has(scope))), { minLength: 1, maxLength: 3 })
  return undefined
}

function parameterArbitrary (op: Operation, p: Parameter, codes: string[]): fc.Arbitrary<unknown> {
  // An error code in the path: one the document lists somewhere, or any text.
  if (p.in === 'path' && p.name === 'code' && codes.length > 0) return fc.oneof(fc.constantFrom(...codes), validArbitrary(p.schema))
  if (p.in === 'path' && p.name === 'id') return idFor(pathIdSlots(op.path), validArbitrary(p.schema, {}, `${op.key} path ${p.name}`))
  if (p.in === 'path' && p.name === 'provider') return fc.constant(FUZZ_PROVIDER)
  if (p.in === 'path' && p.name === 'deliveryId') return idFor(SLOTS.deliveryId, idString)
  if (p.in === 'path' && (p.name === 'fileId' || p.name === 'imageId')) return idFor(SLOTS.fileId, idString)
  if (p.in === 'query' && p.name === 'authorId') return idFor(SLOTS.userId, idString)
  if (p.in === 'header' && p.schema.type === 'string' && p.schema.pattern === undefined) return headerText
  return validArbitrary(p.schema, {}, `${op.key} ${p.in} ${p.name}`)
}

function parametersArbitrary (op: Operation, place: Parameter['in'], codes: string[]): fc.Arbitrary<Record<string, unknown>> {
  const entries = op.parameters.filter((p) => p.in === place).map((p) =>
    fc.tuple(fc.constant(p.name), p.required ? parameterArbitrary(op, p, codes) : fc.option(parameterArbitrary(op, p, codes), { nil: undefined })))
  return fc.tuple(...entries).map((pairs) => Object.fromEntries(pairs.filter(([, v]) => v !== undefined)))
}

export function whoArbitrary (op: Operation): fc.Arbitrary<Who | undefined> {
  return op.secured ? fc.constantFrom<Who>('alice', 'bob', 'admin') : fc.option(fc.constantFrom<Who>('alice', 'bob', 'admin'), { nil: undefined, freq: 3 })
}

/** The body schema for each media type the operation accepts. */
export function bodyMedia (op: Operation): Array<[string, Schema]> {
  return Object.entries(op.body?.media ?? {})
}

/** An upload's body, sent as its bytes with its own Content-Type (a form's names its boundary). */
export class FileBody {
  readonly bytes: Buffer
  readonly contentType: string
  constructor (bytes: Buffer, contentType: string) { this.bytes = bytes; this.contentType = contentType }
  toJSON (): string { return `<${this.contentType}: ${this.bytes.length} bytes>` }
}

// A small real image of each type an upload takes: a valid upload is an image whose bytes are
// what its Content-Type says.
const base = sharp({ create: { width: 12, height: 8, channels: 3, background: { r: 200, g: 100, b: 50 } } })
const IMAGES: Record<string, Buffer> = {
  'image/jpeg': await base.clone().jpeg().toBuffer(),
  'image/png': await base.clone().png().toBuffer(),
  'image/webp': await base.clone().webp().toBuffer(),
  'image/gif': await base.clone().gif().toBuffer(),
  'image/avif': await base.clone().avif({ effort: 0 }).toBuffer()
}

function fileBody (type: string, schema: Schema): fc.Arbitrary<FileBody> | undefined {
  if (schema.format === 'binary' && IMAGES[type] !== undefined) return fc.constant(new FileBody(IMAGES[type], type))
  if (type === 'multipart/form-data' && schema.properties?.file?.format === 'binary') {
    const boundary = 'fuzz-boundary-7d3f'
    const bytes = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fuzz.png"\r\nContent-Type: image/png\r\n\r\n`), IMAGES['image/png']!, Buffer.from(`\r\n--${boundary}--\r\n`)])
    return fc.constant(new FileBody(bytes, `multipart/form-data; boundary=${boundary}`))
  }
  return undefined
}

/**
 * Requests the document says are valid for this operation. `codes` are the error codes the
 * document names (for the catalogue's `/errors/{code}`).
 */
export function validRequest (op: Operation, codes: string[] = []): fc.Arbitrary<GeneratedRequest> {
  const media = bodyMedia(op)
  const body: fc.Arbitrary<[string | undefined, unknown]> = media.length === 0
    ? fc.constant([undefined, undefined])
    : fc.oneof(...media.map(([type, schema]) => fc.tuple(fc.constant(type), fileBody(type, schema) ?? validArbitrary(schema, { member: bodyHints }, `${op.key} body`))))
  return fc.record({
    path: parametersArbitrary(op, 'path', codes),
    query: parametersArbitrary(op, 'query', codes),
    headers: parametersArbitrary(op, 'header', codes),
    who: whoArbitrary(op),
    body,
    aligned: fc.boolean()
  }).map(({ body: [contentType, value], aligned, ...rest }) => {
    const request = { key: op.key, contentType, body: value, ...rest, query: ordered(rest.query) }
    return aligned ? align(request) : request
  })
}

/**
 * The rules between query parameters the document states in words: `minPrice` at most
 * `maxPrice`, `createdAfter` earlier than `createdBefore`, `ticket` only on a stream. A valid request keeps them (a pair
 * drawn the other way round is swapped; an equal pair of times loses its upper bound).
 */
function ordered (query: Record<string, unknown>): Record<string, unknown> {
  const result = { ...query }
  // A stream ticket is only for `Accept: text/event-stream`; the fuzzer reads JSON answers.
  delete result.ticket
  const { minPrice, maxPrice, createdAfter, createdBefore } = query
  if (typeof minPrice === 'number' && typeof maxPrice === 'number' && minPrice > maxPrice) Object.assign(result, { minPrice: maxPrice, maxPrice: minPrice })
  if (typeof createdAfter === 'string' && typeof createdBefore === 'string') {
    const [after, before] = [Date.parse(createdAfter), Date.parse(createdBefore)]
    if (after > before) Object.assign(result, { createdAfter: createdBefore, createdBefore: createdAfter })
    if (after === before) delete result.createdBefore
  }
  return result
}

/**
 * Half the time, a request is made so that the success path is reachable: a list is asked for
 * its first page (a generated cursor is another list's, 400), a precondition is `If-Match: *`
 * (a generated tag is stale, 412), the caller is the user of the path (an account's own
 * operations: change, delete, password), and a password goes with the account it is offered
 * for (the e-mail beside it at log-in, the user of the path on a password change), and an image
 * is removed through its owner by the owner's author.
 */
function align (request: GeneratedRequest): GeneratedRequest {
  const pathUser = request.path.id instanceof Slot && request.path.id.kind === 'userId' ? request.path.id.name as Who : undefined
  const query = { ...request.query }
  delete query.cursor
  const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, name.toLowerCase() === 'if-match' ? '*' : value]))
  const aligned = { ...request, query, headers, who: pathUser !== undefined && request.who !== undefined ? pathUser : request.who }
  // An image removed through what owns it: the world's image of that owner, by its owner's author.
  if (request.path.imageId !== undefined) {
    const onPost = request.key.includes('/v1/posts/')
    aligned.path = { ...request.path, id: onPost ? new Slot('postId', 'alice') : new Slot('productId', 'onSale'), imageId: new Slot('fileId', onPost ? 'alicePost' : 'onSale') }
    aligned.who = onPost ? 'alice' : 'admin'
  }
  const body = request.body as Record<string, unknown> | undefined
  if (body === undefined || body === null || typeof body !== 'object' || body instanceof FileBody) return aligned
  const owner = body.email instanceof Slot ? body.email.name : pathUser
  if (owner === undefined) return aligned
  const copy = { ...body }
  for (const name of ['password', 'currentPassword']) if (copy[name] instanceof Slot) copy[name] = new Slot('password', owner)
  return { ...aligned, body: copy }
}

export interface Materialized {
  raw: RawRequest
  params: Record<string, string>
  body: unknown
}

/** The request as sent: slots replaced by the world's current values. */
export function materialize (world: World, g: GeneratedRequest): Materialized {
  const [method, path] = g.key.split(' ') as [string, string]
  const params = world.resolve(g.path, 'text') as Record<string, string>
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''))
  // An array is the parameter repeated (`category=BOOK&category=FOOD`), as the document's form style says.
  const query = new URLSearchParams(Object.entries(world.resolve(g.query, 'text') as Record<string, unknown>)
    .flatMap(([k, v]): Array<[string, string]> => Array.isArray(v) ? v.map((each) => [k, String(each)]) : [[k, String(v)]])).toString()
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(world.resolve(g.headers, 'text') as Record<string, unknown>)) headers[name] = String(value)
  if (g.who !== undefined) headers.authorization = world.users[g.who].auth.authorization
  const body = world.resolve(g.body, 'body')
  const raw: RawRequest = { method, url: query === '' ? url : `${url}?${query}`, headers }
  if (g.body instanceof FileBody) {
    headers['content-type'] = g.body.contentType
    raw.payload = g.body.bytes
  } else if (g.contentType !== undefined) {
    headers['content-type'] = g.contentType
    raw.payload = JSON.stringify(body)
  }
  return { raw, params, body }
}
