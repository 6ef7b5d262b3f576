import { Type, type TSchema, type TString, type StringOptions } from '@sinclair/typebox'
import { catalogue, type ErrorCode } from './errors.js'

// Building blocks shared by every feature's schemas. The rules of contract section 8 are
// expressed here once: "non-blank" is the standard `pattern: \S` (one character that is not white
// space), and `x-well-formed` (an Ajv keyword, see validation.ts) refuses NUL characters and
// unpaired surrogates, which the two databases would store differently or refuse.

export const NON_BLANK = '\\S'
export const MAX_ID = 9223372036854775807n

/** A user-supplied string: well-formed, non-blank, with the given limits (code points). */
export function Text (options: StringOptions = {}): TString {
  return Type.String({ pattern: NON_BLANK, 'x-well-formed': true, ...options })
}

/** An id as it appears in a representation: a 64-bit integer written as a JSON number. */
export const Id = Type.Unsafe<bigint>({ type: 'integer', format: 'int64', minimum: 1, examples: [42] })

/** An id as it appears in a path or query: a decimal string, never parsed through floating point. */
export function IdString (description = 'A resource id: a decimal integer from 1 to 9223372036854775807.'): TString {
  return Type.String({ pattern: '^[1-9][0-9]{0,18}$', 'x-int64-id': true, description, examples: ['42'] })
}

export const IdParams = Type.Object({ id: IdString() })

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T16:30:00.000Z'] })

/** A member of the representation that a client may send back; it is accepted and ignored. */
export function ReadOnly (description: string): TSchema {
  return Type.Optional(Type.Unknown({ readOnly: true, description: `${description} Read-only: accepted and ignored.` }))
}

export const FieldErrorSchema = Type.Object({
  field: Type.String({ description: 'The request field that failed: a body member, a path or a query parameter.' }),
  message: Type.String()
})

function errorBody (codes: ErrorCode[]): TSchema {
  return Type.Object({
    type: Type.String({ description: 'Relative URI of the catalogue entry: /errors/CODE.' }),
    title: Type.String({ description: 'Stable per code.' }),
    status: Type.Integer(),
    // One `enum` listing the codes (rather than a union of literals), which is what OpenAPI
    // tools turn into an enumeration.
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: codes, description: 'Stable, machine-readable reason; branch on it.' }),
    message: Type.String({ description: 'Human-readable, safe to show to a user.' }),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: 'Only with VALIDATION_ERROR: one entry per failed field.' }))
  }, { description: codes.join(', ') })
}

// Every operation can answer these: a failure and an outage (or the server shutting down).
const ALWAYS: ErrorCode[] = ['INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']

/**
 * Response schemas for the error codes an operation can return, grouped by status, so the
 * OpenAPI document lists per operation exactly which codes a client must handle.
 */
export function errorResponses (...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...codes, ...ALWAYS]) {
    const status = catalogue[code].status
    const list = byStatus.get(status) ?? []
    if (!list.includes(code)) list.push(code)
    byStatus.set(status, list)
  }
  const responses: Record<number, TSchema> = {}
  for (const [status, list] of byStatus) {
    // The same body under both media types (contract section 7: application/problem+json when
    // the request's Accept asks for it).
    const schema = errorBody(list)
    responses[status] = Type.Unsafe({
      description: list.join(', '),
      content: { 'application/json': { schema }, 'application/problem+json': { schema } }
    })
  }
  return responses
}

/** The codes every operation with a JSON body can answer for its shape. */
export const BODY_ERRORS: ErrorCode[] = ['VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']
/** The codes of an operation that needs a logged-in caller. */
export const AUTH_ERRORS: ErrorCode[] = ['AUTHENTICATION_REQUIRED']

export const NoContent = Type.Null({ description: 'No content.' })

// Conditional requests and list paging, described once for every operation that has them.
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'A strong ETag from GET; a stale one is 412 PRECONDITION_FAILED and nothing changes.' }))
})
export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'An ETag from an earlier GET; when it still matches the answer is 304 with no body.' }))
})
export const NotModified = Type.Null({ description: 'Not modified: the If-None-Match tag still matches.' })
export const ETAG_HEADER = { etag: Type.String({ description: 'A strong entity tag of this representation.' }) }
export const LINK_HEADER = { link: Type.String({ description: 'Present when more items follow: `<URL>; rel="next"`.' }) }
