import fc from 'fast-check'
import type { RawRequest } from './fuzz-app.js'
import type { World, Who } from './fuzz-world.js'
import type { Operation } from './openapi-operations.js'
import { materialize, validRequest, type GeneratedRequest } from './request-arbitrary.js'

// Requests no well-behaved client sends: a generated request of the operation with its id,
// query, headers, credentials, content type, content encoding or raw body replaced by something
// odd. The service must answer every one of them as the document says, and never with a 5xx.

/** A credential: a live token, one of the broken kinds, or a random header value. */
export type Credential = { live: Who } | { kind: 'logged-out' | 'deleted-user' } | { raw: string | undefined }

const token43 = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), minLength: 43, maxLength: 43 })
const printable = (max: number) => fc.string({ unit: 'grapheme-ascii', maxLength: max })

export const brokenAuthorization: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'Token abc', 'Bearer a', 'Bearer \t', 'Bearer null', 'Bearer undefined',
    'Bearer ' + 'A'.repeat(19), 'Bearer ' + 'A'.repeat(201), 'Bearer =====================', 'Bearer ../../etc/passwd', "Bearer ' OR '1'='1"),
  token43.map((t) => `Bearer ${t}`),
  token43.map((t) => `bearer ${t}`),
  token43.map((t) => `Bearer ${t} ${t}`),
  printable(60)
)

const credential: fc.Arbitrary<Credential> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Who>('alice', 'bob', 'admin').map((live) => ({ live })) },
  { weight: 1, arbitrary: fc.constantFrom('logged-out' as const, 'deleted-user' as const).map((kind) => ({ kind })) },
  { weight: 2, arbitrary: brokenAuthorization.map((raw) => ({ raw })) }
)

const contentType = fc.oneof(
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset="utf-8"',
    'application/json; charset=latin1', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/merge-patch+json',
    'application/problem+json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain', 'text/json',
    'application/jsonx', 'application/json-patch+json', '*/*', 'application/*', ';', 'application/json; foo', 'application/json; charset='),
  printable(30)
)
const contentEncoding = fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'IDENTITY', ' identity ', 'gzip, identity', 'x-custom', '*', '')
const accept = fc.constantFrom('application/json', 'application/problem+json', 'application/problem+json, application/json;q=0.5', '*/*', 'text/html', 'application/json;q=0', 'image/png', '')

const oddId = fc.oneof(
  fc.constantFrom('0', '-1', '1.5', '1e3', '0x1f', '9223372036854775807', '9223372036854775808', '99999999999999999999999999', '１２', '1 ', ' ', 'null',
    '%', '%00', '\u0000', '1\u0000', '<script>', "1' OR '1'='1", '1;DROP TABLE users', '../1', '..%2F1', 'a/b', 'é', '😀', '\u202e1'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 300 }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String)
).filter((s) => s !== '.' && s !== '..')

/** Raw bodies: broken JSON, JSON of the wrong shape, deep or wide documents, random bytes. */
const rawBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom('', ' ', '{', '}', '[', 'null', 'true', '0', '-0', '1e400', '-1e400', '"x"', '[]', '{}', '{"a":1,"a":2}', '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{}}}', '\uFEFF{}', '{"title":"\\ud800"}', '{"title":"a\\u0000b"}', 'NaN', 'Infinity', "{'a':1}", '{"a":1,}', '[1,]',
    '{"quantity":1.0000000000000000000001}', '{"price":100000000000000000000000}', '{"productId":1e2}', '{"id":9223372036854775808}'),
  fc.integer({ min: 1, max: 3000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, i])))),
  fc.integer({ min: 1, max: 5000 }).map((n) => JSON.stringify(Array.from({ length: n }, () => 0))),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 100 }),
  // Over the body limit these tests configure (BODY_LIMIT_BYTES below).
  fc.constant(`{"title":"${'x'.repeat(70_000)}"}`)
)

export const HOSTILE_BODY_LIMIT = '65536'

const oddHeaders = fc.dictionary(
  fc.constantFrom('if-match', 'if-none-match', 'idempotency-key', 'x-request-id', 'x-forwarded-for', 'x-http-method-override', 'origin', 'range',
    'expect', 'cookie', 'forwarded', 'x-real-ip', 'prefer', 'accept-charset', 'accept-encoding'),
  fc.oneof(printable(80), fc.constantFrom('*', '"x"', 'W/"x"', '', ' ', 'DELETE', 'null', '100-continue', 'bytes=0-1', '\t', 'x'.repeat(300))),
  { maxKeys: 3 }
)

export interface HostileRequest {
  base: GeneratedRequest
  id: string | undefined
  credential: Credential | undefined
  contentType: string | undefined
  contentEncoding: string | undefined
  accept: string | undefined
  headers: Record<string, string>
  extraQuery: Array<[string, string]>
  body: string | Buffer | undefined
}

const opt = <T>(arb: fc.Arbitrary<T>, freq = 2): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined, freq })

export function hostileRequest (op: Operation): fc.Arbitrary<HostileRequest> {
  const hasId = op.parameters.some((p) => p.in === 'path')
  return fc.record({
    base: validRequest(op),
    id: hasId ? opt(oddId) : fc.constant(undefined),
    credential: opt(credential, 1),
    contentType: opt(contentType),
    contentEncoding: opt(contentEncoding, 4),
    accept: opt(accept, 3),
    headers: oddHeaders,
    extraQuery: fc.array(fc.tuple(fc.constantFrom('limit', 'cursor', 'authorId', 'id', '__proto__', 'limit[]', 'q', ''), printable(30)), { maxLength: 2 }),
    body: opt(rawBody)
  })
}

/** A live token that has been logged out, and one whose user was deleted (made once per app). */
export interface DeadTokens { loggedOut: string, deletedUser: string }

export function materializeHostile (world: World, dead: DeadTokens, h: HostileRequest): { raw: RawRequest, params: Record<string, string>, body: unknown } {
  const base = materialize(world, h.base)
  const raw = { ...base.raw, headers: { ...base.raw.headers } }
  const params = { ...base.params }
  if (h.id !== undefined) {
    params.id = h.id
    raw.url = h.base.key.split(' ')[1]!.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? '')) + (raw.url.includes('?') ? raw.url.slice(raw.url.indexOf('?')) : '')
  }
  if (h.extraQuery.length > 0) {
    const extra = new URLSearchParams(h.extraQuery).toString()
    raw.url += (raw.url.includes('?') ? '&' : '?') + extra
  }
  Object.assign(raw.headers, h.headers)
  if (h.credential !== undefined) {
    const c = h.credential
    const value = 'live' in c ? world.users[c.live].auth.authorization
      : 'kind' in c ? `Bearer ${c.kind === 'logged-out' ? dead.loggedOut : dead.deletedUser}` : c.raw
    if (value === undefined) delete raw.headers.authorization
    else raw.headers.authorization = value
  }
  if (h.contentType !== undefined) raw.headers['content-type'] = h.contentType
  if (h.contentEncoding !== undefined) raw.headers['content-encoding'] = h.contentEncoding
  if (h.accept !== undefined) raw.headers.accept = h.accept
  if (h.body !== undefined) {
    raw.payload = h.body
    if (raw.headers['content-type'] === undefined && h.body !== '') raw.headers['content-type'] = 'application/json'
  }
  return { raw, params, body: base.body }
}
