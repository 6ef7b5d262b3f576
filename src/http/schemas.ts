import { Type, type Static, type TSchema, type TString, type TUnsafe, type StringOptions } from '@sinclair/typebox'
import { catalogue, errorCodes, type ErrorCode } from './errors.js'

// Building blocks shared by every feature's schemas. The field rules (docs/api.md) are
// expressed here once, in standard JSON Schema where it can say them, so that a generated client
// or validator refuses what the service refuses: text is well formed (no NUL character, no
// unpaired surrogate, which the two databases would store differently or refuse) and, where it
// is required, not blank (one character that is not white space). A surrogate pair is one code
// point with the `u` flag and two code units without it: the pattern holds either way.
// `x-well-formed` (an Ajv keyword, see validation.ts) says the same for the error message.

const WELL_FORMED_CHARACTERS = '(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*'
/** Well-formed text (possibly empty or blank). */
export const WELL_FORMED = `^${WELL_FORMED_CHARACTERS}$`
/** Well-formed text with at least one character that is not white space. */
export const NON_BLANK = `^(?=[\\s\\S]*\\S)${WELL_FORMED_CHARACTERS}$`
/** Search text must hold a word: at least one letter or digit (src/search/search-terms.ts). */
export const HAS_WORD = '[\\p{L}\\p{N}]'

/**
 * Names a schema: with a `$id` it is registered once (app.addSchema, and the validator's Ajv),
 * appears in the OpenAPI document under components.schemas by that name, and operations
 * reference it with ref() instead of repeating it, so generated clients get named types.
 */
export function named<T extends TSchema> (id: string, schema: T): T {
  return { ...schema, $id: id }
}

/** A reference to a named schema, typed as the schema itself; its examples go along to the operation. */
export function ref<T extends TSchema> (schema: T, options: Record<string, unknown> = {}): TUnsafe<Static<T>> {
  if (schema.$id === undefined) throw new Error('ref() needs a named schema')
  return Type.Unsafe<Static<T>>({ $ref: schema.$id, ...(schema.examples === undefined ? {} : { examples: schema.examples }), ...options })
}
export const MAX_ID = 9223372036854775807n

/** A user-supplied string: well-formed, non-blank, with the given limits (code points). */
export function Text (options: StringOptions = {}): TString {
  return Type.String({ pattern: NON_BLANK, 'x-well-formed': true, ...options })
}

/** The largest id the service issues (2^53 - 1): every JSON client reads it exactly. The database enforces it. */
export const MAX_ISSUED_ID = Number.MAX_SAFE_INTEGER

/** An id as it appears in a representation: an integer written as a JSON number, at most 2^53 - 1. */
export const Id = Type.Unsafe<bigint>({ type: 'integer', format: 'int64', minimum: 1, maximum: MAX_ISSUED_ID, examples: [42] })

/**
 * The decimal integers from 1 to `max` as one regular expression, so that the document's
 * machine-readable rule is the one enforced: every shorter number, then for each digit of `max`
 * the numbers that match it up to there and are lower at that digit, then `max` itself.
 */
export function decimalsUpTo (max: bigint): string {
  const digits = max.toString()
  const branches = digits.length > 1 ? [`[1-9][0-9]{0,${digits.length - 2}}`] : []
  for (const [i, digit] of [...digits].entries()) {
    const low = i === 0 ? 1 : 0
    const rest = digits.length - 1 - i
    if (Number(digit) - 1 >= low) branches.push(`${digits.slice(0, i)}[${low}-${Number(digit) - 1}]${rest > 0 ? `[0-9]{${rest}}` : ''}`)
  }
  branches.push(digits)
  return `^(?:${branches.join('|')})$`
}

/** A path or query id: 1 to 2^63 − 1 in decimal, no sign, no leading zero. */
export const ID_PATTERN = decimalsUpTo(MAX_ID)

/** An id as it appears in a path or query: a decimal string, never parsed through floating point. */
export function IdString (description = 'A resource id: a decimal integer from 1 to 9223372036854775807.'): TString {
  return Type.String({ pattern: ID_PATTERN, 'x-int64-id': true, description, examples: ['42'] })
}

export const IdParams = Type.Object({ id: IdString() })

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T16:30:00.000Z'] })

/** A member of the representation that a client may send back; it is accepted and ignored. */
export function ReadOnly (description: string): TSchema {
  return Type.Optional(Type.Unknown({ readOnly: true, description: `${description} Read-only: accepted and ignored.` }))
}

export const FieldErrorSchema = named('FieldError', Type.Object({
  field: Type.String({ description: 'The request field that failed: a body member (dotted path), a path or a query parameter, or `body` for the body as a whole.' }),
  message: Type.String({ description: 'Why it failed, safe to show to a user.' })
}, { description: 'One failed field of a VALIDATION_ERROR.', examples: [{ field: 'email', message: 'must be a valid e-mail address' }] }))

const problemMembers = {
  type: Type.String({ description: 'Relative URI of the catalogue entry: /errors/CODE (GET it for the description).' }),
  title: Type.String({ description: 'Stable per code.' }),
  status: Type.Integer({ description: 'The HTTP status, repeated.' }),
  code: Type.Unsafe<ErrorCode>({ type: 'string', enum: errorCodes, description: 'Stable, machine-readable reason; branch on it. Each code is explained at /errors/CODE.' }),
  message: Type.String({ description: 'Human-readable, safe to show to a user.' }),
  requestId: Type.String({ description: 'Equal to the X-Request-Id header; quote it when reporting a problem.' })
}

/** Every error body: the code, a message, the request id; also an RFC 9457 problem object. */
export const Problem = named('Problem', Type.Object({
  ...problemMembers,
  errors: Type.Optional(Type.Array(ref(FieldErrorSchema), { maxItems: 50, description: 'Only with VALIDATION_ERROR: one entry per failed field (the first 50).' }))
}, {
  description: 'An error. Branch on `code`; `type` links the code\'s catalogue entry.',
  examples: [{ type: '/errors/POST_NOT_FOUND', title: 'Post not found', status: 404, code: 'POST_NOT_FOUND', message: 'The post does not exist.', requestId: 'req-1' }]
}))

/** VALIDATION_ERROR: the error body with `errors[]`, one entry per failed field. */
export const ValidationProblem = named('ValidationProblem', Type.Object({
  ...problemMembers,
  code: Type.Literal('VALIDATION_ERROR'),
  errors: Type.Array(ref(FieldErrorSchema), { minItems: 1, maxItems: 50, description: 'One entry per failed field (the first 50; the message says when more failed).' })
}, {
  description: 'A request that breaks field rules (see /errors/VALIDATION_ERROR).',
  examples: [{
    type: '/errors/VALIDATION_ERROR',
    title: 'Validation error',
    status: 400,
    code: 'VALIDATION_ERROR',
    message: 'The request has invalid fields.',
    requestId: 'req-1',
    errors: [{ field: 'email', message: 'must be a valid e-mail address' }]
  }]
}))

// Headers of every response (see docs/api.md): the request id, and the general rate limit's
// state while that limit is on (RATE_LIMIT_PER_MINUTE, on by default).
export const COMMON_HEADERS = {
  'x-request-id': Type.String({ description: 'The request id: the client\'s own when it sent a sane one (at most 128 printable ASCII characters), else one made by the server. Equal to `requestId` in an error body.' }),
  ratelimit: Type.String({ description: 'The general rate limit\'s state for this client (IETF RateLimit header fields): `"default";r=REMAINING;t=SECONDS`. Absent when the limit is off.' }),
  'ratelimit-policy': Type.String({ description: 'The general rate limit\'s policy: `"default";q=REQUESTS;w=60`. Absent when the limit is off.' })
}
export const RETRY_AFTER_HEADER = { 'retry-after': Type.String({ description: 'Seconds to wait before retrying.' }) }
export const WWW_AUTHENTICATE_HEADER = { 'www-authenticate': Type.String({ description: 'The scheme to use: `Bearer realm="api"`.' }) }

const INSUFFICIENT_SCOPE_HEADER = { 'www-authenticate': Type.String({ description: 'With INSUFFICIENT_SCOPE (RFC 6750): `Bearer realm="api", error="insufficient_scope", scope="<the scope needed>"` (no `scope` where only a log-in token will do).' }) }

/** Headers each error status sends on top of the common ones. */
function errorHeaders (status: number, codes: ErrorCode[]): Record<string, TSchema> {
  if (status === 401) return { ...COMMON_HEADERS, ...WWW_AUTHENTICATE_HEADER }
  if (status === 403 && codes.includes('INSUFFICIENT_SCOPE')) return { ...COMMON_HEADERS, ...INSUFFICIENT_SCOPE_HEADER }
  if (status === 429 || status === 503) return { ...COMMON_HEADERS, ...RETRY_AFTER_HEADER }
  if (status === 416) return { ...COMMON_HEADERS, 'content-range': Type.String({ description: '`bytes */SIZE`: the whole size of the file.' }) }
  return COMMON_HEADERS
}

// Every operation can answer these: the general rate limit, a failure, an outage (or the server
// shutting down).
const ALWAYS: ErrorCode[] = ['TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']

/** The body schema of one error status: the named problem, narrowed to the codes listed. */
function errorSchema (codes: ErrorCode[]): Record<string, unknown> {
  if (codes.length === 1 && codes[0] === 'VALIDATION_ERROR') return { $ref: 'ValidationProblem' }
  const properties: Record<string, unknown> = { code: { type: 'string', enum: codes } }
  if (codes.includes('MFA_REQUIRED')) {
    properties.challenge = { type: 'string', description: 'Only with MFA_REQUIRED: send it back with a code to POST /v1/sessions.' }
    properties.expiresAt = { type: 'string', format: 'date-time', description: 'Only with MFA_REQUIRED: when the challenge expires (5 minutes).' }
  }
  return { allOf: [{ $ref: 'Problem' }, { type: 'object', properties }] }
}

function describeCodes (codes: ErrorCode[]): string {
  return codes.map((code) => `[${code}](/errors/${code})`).join(', ')
}

/**
 * Response schemas for the error codes an operation can return, grouped by status, so the
 * OpenAPI document lists per operation exactly which codes a client must handle (each linked
 * to its catalogue entry).
 */
export function errorResponses (...codes: ErrorCode[]): Record<number, TSchema> {
  return errorResponsesOf(codes, ALWAYS)
}

/** Error responses of an operation the general rate limit does not apply to (health checks). */
export function unlimitedErrorResponses (...codes: ErrorCode[]): Record<number, TSchema> {
  return errorResponsesOf(codes, ['INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE'])
}

function errorResponsesOf (codes: ErrorCode[], always: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...codes, ...always]) {
    const status = catalogue[code].status
    const list = byStatus.get(status) ?? []
    if (!list.includes(code)) list.push(code)
    byStatus.set(status, list)
  }
  const responses: Record<number, TSchema> = {}
  for (const [status, list] of byStatus) {
    // The same body under both media types (application/problem+json when the request's
    // Accept asks for it).
    const schema = errorSchema(list)
    const example = list.length === 1 && list[0] === 'VALIDATION_ERROR' ? ValidationProblem.examples[0] : exampleProblem(list[0]!)
    responses[status] = Type.Unsafe({
      description: describeCodes(list),
      headers: errorHeaders(status, list),
      content: { 'application/json': { schema, example }, 'application/problem+json': { schema, example } }
    })
  }
  return responses
}

/** The same responses with more headers documented on the statuses named. */
export function withHeaders (responses: Record<number, TSchema>, statuses: number[], headers: Record<string, TSchema>): Record<number, TSchema> {
  const out = { ...responses }
  for (const status of statuses) {
    const response = out[status]
    if (response !== undefined) out[status] = { ...response, headers: { ...(response.headers as object), ...headers } }
  }
  return out
}

function exampleProblem (code: ErrorCode): Record<string, unknown> {
  const entry = catalogue[code]
  return { type: `/errors/${code}`, title: entry.title, status: entry.status, code, message: entry.message, requestId: 'req-1' }
}

/**
 * A success response: a named representation (or an array of one) with the headers it sends
 * beside the common ones, and an example body.
 */
export function success<T extends TSchema> (schema: T, options: { description: string, headers?: Record<string, TSchema>, example?: unknown }): TUnsafe<Static<T>> {
  const example = options.example ?? (schema.examples as unknown[] | undefined)?.[0]
  // A named schema is referenced, never repeated in place.
  const body = schema.$id === undefined ? schema : { $ref: schema.$id }
  return Type.Unsafe<Static<T>>({
    description: options.description,
    headers: { ...COMMON_HEADERS, ...options.headers },
    content: { 'application/json': { schema: body, ...(example === undefined ? {} : { example }) } }
  })
}

/** A response with no body (204, 304). */
export function empty (description: string, headers: Record<string, TSchema> = {}): TSchema {
  return Type.Unsafe({ type: 'null', description, headers: { ...COMMON_HEADERS, ...headers } })
}

/** The codes every operation with a JSON body can answer for its shape. */
export const BODY_ERRORS: ErrorCode[] = ['VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']
/** The codes of an operation that needs a logged-in caller. */
/** What authentication answers: no usable credential (401), or an API key without the operation's scope (403). */
export const AUTH_ERRORS: ErrorCode[] = ['AUTHENTICATION_REQUIRED', 'INSUFFICIENT_SCOPE']

export const NoContent = empty('No content.')

// Conditional requests and list paging, described once for every operation that has them.
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'A strong ETag from GET; a stale one is 412 PRECONDITION_FAILED and nothing changes.' }))
})
export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'An ETag from an earlier GET; when it still matches the answer is 304 with no body.' }))
})
export const ETAG_HEADER = { etag: Type.String({ description: 'A strong entity tag of this representation; send it as If-Match to change the resource, or as If-None-Match to read it again cheaply.' }) }
export const LINK_HEADER = { link: Type.String({ description: 'Present when more items follow: `<URL>; rel="next"`, the same path and filters with the next cursor.' }) }
export const LOCATION_HEADER = { location: Type.String({ description: 'The address of the created resource.' }) }
export const NotModified = empty('Not modified: the If-None-Match tag still matches.', ETAG_HEADER)
