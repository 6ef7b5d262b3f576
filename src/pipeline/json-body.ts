import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError, validationError } from '../http/errors.js'

// The only body format is JSON (and, for PATCH, JSON merge patch). Anything else is 415.
// An empty body reads as "no body", which validation treats as an empty object, so the client
// hears which fields are required instead of a parse error.
//
// Beyond JSON.parse, a body must be I-JSON (RFC 7493) in two ways that would otherwise lose data
// silently: it is UTF-8 (an invalid byte would become U+FFFD), and no object names a member twice
// (JSON.parse keeps the last one and drops the other). A leading UTF-8 byte order mark is
// ignored, as RFC 8259 section 8.1 allows.
//
// Before JSON.parse builds anything, one scan over the raw text (scanJson below) refuses a body
// nested more than 32 levels deep or holding more than 1,000 members and elements in all: it
// stops at the first container or value past the limit, so such a body costs no more than the
// first 1,000 values of it, however large it is. The same scan reads every number's own text, so
// that an integer is judged on its exact value and not on the double JSON.parse rounds it to.

const BOM = '\uFEFF'
const MERGE_PATCH = 'application/merge-patch+json'

/**
 * Checked before the body is read (the request path's body phase, request-hooks.ts), so that they
 * are a 415 before any 413 or MALFORMED_JSON (docs/api.md): a compressed body (no
 * Content-Encoding is supported, RFC 9110 15.5.16), and JSON merge patch, a PATCH format,
 * elsewhere. `takesBody`: the route's schema has a body.
 */
export function checkBodyHeaders (request: FastifyRequest, takesBody: boolean, upload = false): void {
  // An operation that takes no body (every GET, HEAD and DELETE) ignores one sent with it
  // rather than judging it: its answers stay the ones it documents. Only the JS view of the
  // headers changes (the HTTP parser has already framed the request), so the body is never
  // read, and Node discards its bytes once the response is sent. POST always reads its body.
  if (request.method !== 'POST' && !takesBody) {
    delete request.raw.headers['content-type']
    delete request.raw.headers['transfer-encoding']
    delete request.raw.headers['content-length']
    return
  }
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase()
  const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0'
  if (encoding !== 'identity' && hasBody) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'Compressed request bodies (Content-Encoding) are not supported.' })
  }
  // A file's type is judged by its bytes (files/uploads.ts).
  if (upload) return
  const contentType = (request.headers['content-type'] ?? '').toLowerCase()
  // JSON is UTF-8 (RFC 8259 section 8.1); a body declared in another charset is refused, not misread.
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/.exec(contentType)?.[1]
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && hasBody) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'Request bodies must be JSON in UTF-8.' })
  }
  if (request.method !== 'PATCH' && contentType.startsWith(MERGE_PATCH) && takesBody) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: `${MERGE_PATCH} is accepted only by PATCH.` })
  }
}

/** The body parser: JSON and JSON merge patch, nothing else. */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'buffer' },
    (_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      try {
        done(null, parseJson(body))
      } catch (error) {
        done(error as Error)
      }
    })
}

/** Most containers one inside the other; the body itself is level 1. */
export const MAX_DEPTH = 32
/** Most object members and array elements, counted over the whole body. */
export const MAX_VALUES = 1000

/**
 * A number whose JSON text JSON.parse would misread: a fraction too small for a double to keep
 * (`1.0000000000000000000001` reads as the integer 1), or a magnitude beyond a double
 * (`1e400` reads as Infinity). It stands in the parsed body where that number was, so the
 * field's own rule fails (it is not a number at all) and validation names the field.
 */
export class MisreadNumber {
  readonly text: string
  readonly reason: 'fraction' | 'range'

  constructor (text: string, reason: 'fraction' | 'range') {
    this.text = text
    this.reason = reason
  }

  get message (): string {
    return this.reason === 'range' ? 'is out of range' : 'must be an integer (its fraction is too small to keep, not zero)'
  }
}

/** Parses a request body; throws MALFORMED_JSON or VALIDATION_ERROR. Undefined for an empty body. */
export function parseJson (body: string | Buffer): unknown {
  if (typeof body !== 'string' && !isUtf8(body)) {
    throw new ApiError('MALFORMED_JSON', { message: 'The request body is not valid UTF-8.' })
  }
  let text = typeof body === 'string' ? body : body.toString('utf8')
  if (text.startsWith(BOM)) text = text.slice(1)
  if (text.trim() === '') return undefined
  // Throws on a body too deep or too large before JSON.parse spends anything on it.
  const scan = scanJson(text)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError('MALFORMED_JSON')
  }
  if (scan.duplicate !== undefined) {
    throw new ApiError('MALFORMED_JSON', { message: `The member ${JSON.stringify(scan.duplicate)} appears more than once in one object.` })
  }
  // A number as the whole body is refused for not being an object, whatever its value.
  for (const { path, number } of scan.misread) if (path.length > 0) replaceAt(value, path, number)
  return value
}

function replaceAt (root: unknown, path: Array<string | number>, replacement: unknown): void {
  let node = root as Record<string | number, unknown>
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>
  // Not a plain assignment: a member named "__proto__" is an own data property (JSON.parse made
  // it so), and assigning to it would set the object's prototype instead.
  Object.defineProperty(node, path[path.length - 1]!, { value: replacement, enumerable: true, writable: true, configurable: true })
}

export interface JsonScan {
  /** The first member name given twice in one object. */
  duplicate: string | undefined
  /** Numbers JSON.parse would misread, with where they are. */
  misread: Array<{ path: Array<string | number>, number: MisreadNumber }>
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y

interface Container {
  /** Member names seen so far (objects), or null (arrays). */
  names: Set<string> | null
  /** The member name or element index the next value goes to. */
  key: string | number
  /** An object is waiting for a member name (after `{` or `,`). */
  expectName: boolean
}

function tooLarge (message: string): ApiError {
  return validationError([{ field: 'body', message }])
}

/**
 * One pass over a JSON text, no recursion, strings skipped with indexOf. It throws
 * VALIDATION_ERROR (field `body`) as soon as the body is nested too deep or holds too many
 * values; otherwise it reports the first duplicate member name and the misread numbers. The
 * text may be invalid JSON (the scan runs first): the scan then stops and JSON.parse says so.
 */
export function scanJson (text: string): JsonScan {
  const result: JsonScan = { duplicate: undefined, misread: [] }
  const stack: Container[] = []
  let values = 0
  // Counts a value (an object member or an array element) starting inside a container.
  const valueStarts = (): void => {
    if (stack.length === 0) return
    values += 1
    if (values > MAX_VALUES) throw tooLarge(`must hold at most ${MAX_VALUES} members and elements in all`)
  }
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    const top = stack[stack.length - 1]
    if (c === QUOTE) {
      let end = i
      for (;;) {
        end = text.indexOf('"', end + 1)
        if (end === -1) return result // unterminated: not JSON
        let backslashes = 0
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes += 1
        if (backslashes % 2 === 0) break
      }
      if (top !== undefined && top.names !== null && top.expectName) {
        const raw = text.slice(i + 1, end)
        let name = raw
        if (raw.includes('\\')) {
          try { name = JSON.parse(text.slice(i, end + 1)) as string } catch { return result }
        }
        if (top.names.has(name)) result.duplicate ??= name
        top.names.add(name)
        top.key = name
        top.expectName = false
      } else {
        valueStarts()
      }
      i = end + 1
      continue
    }
    if (c === 0x7b || c === 0x5b) { // { [
      valueStarts()
      if (stack.length >= MAX_DEPTH) throw tooLarge(`must not be nested more than ${MAX_DEPTH} levels deep`)
      stack.push(c === 0x7b ? { names: new Set(), key: '', expectName: true } : { names: null, key: 0, expectName: false })
    } else if (c === 0x7d || c === 0x5d) { // } ]
      stack.pop()
    } else if (c === 0x2c) { // ,
      if (top !== undefined) {
        if (top.names === null) top.key = (top.key as number) + 1
        else top.expectName = true
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) { // - 0-9
      NUMBER.lastIndex = i
      const match = NUMBER.exec(text)
      if (match === null) return result
      valueStarts()
      const misread = misreadNumber(match[0])
      if (misread !== undefined) result.misread.push({ path: stack.map((s) => s.key), number: misread })
      i = NUMBER.lastIndex
      continue
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) { // true false null
      valueStarts()
      i += c === 0x66 ? 5 : 4
      continue
    }
    i += 1
  }
  return result
}

/**
 * Whether JSON.parse would misread this number's text: an integer (or not) that its double says
 * otherwise, or a value beyond the double range. An integer of more than 53 bits that merely
 * rounds stays an integer of the same size class, which every bound in the API still judges
 * rightly (all are far below 2^53), so it is left to the field's own rule.
 */
export function misreadNumber (text: string): MisreadNumber | undefined {
  const read = Number(text)
  if (!Number.isFinite(read)) return new MisreadNumber(text, 'range')
  if (!/[.eE]/.test(text)) return undefined
  if (Number.isInteger(read) && !denotesInteger(text)) return new MisreadNumber(text, 'fraction')
  return undefined
}

/** Whether a JSON number's text stands for a whole number (`1.0`, `1.5e1` do; `1.05e1` does not). */
function denotesInteger (text: string): boolean {
  const match = /^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text)!
  const fraction = (match[2] ?? '').replace(/0+$/, '')
  const digits = (match[1]! + fraction).replace(/^0+/, '')
  if (digits === '') return true // zero
  const exponent = Number(match[3] ?? '0')
  // The significant digits without their trailing zeros, times ten to `scale`: whole when scale >= 0.
  const trailingZeros = digits.length - digits.replace(/0+$/, '').length
  return exponent - fraction.length + trailingZeros >= 0
}
