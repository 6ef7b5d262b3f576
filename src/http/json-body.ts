import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

// The only body format is JSON (and, for PATCH, JSON merge patch). Anything else is 415.
// An empty body reads as "no body", which validation treats as an empty object, so the client
// hears which fields are required instead of a parse error.
//
// Beyond JSON.parse, a body must be I-JSON (RFC 7493) in two ways that would otherwise lose data
// silently: it is UTF-8 (an invalid byte would become U+FFFD), and no object names a member twice
// (JSON.parse keeps the last one and drops the other). A leading UTF-8 byte order mark is
// ignored, as RFC 8259 section 8.1 allows.

const BOM = '\uFEFF'
const MERGE_PATCH = 'application/merge-patch+json'

export function registerJsonBody (app: FastifyInstance): void {
  // Checked before the body is read, so that they are a 415 before any 413 or MALFORMED_JSON
  // (contract section 6, step 3): a compressed body (no Content-Encoding is supported, RFC 9110
  // 15.5.16), and JSON merge patch, a PATCH format, elsewhere.
  app.addHook('preParsing', async (request) => {
    const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase()
    const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0'
    if (encoding !== 'identity' && hasBody) {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'Compressed request bodies (Content-Encoding) are not supported.' })
    }
    const contentType = (request.headers['content-type'] ?? '').toLowerCase()
    // JSON is UTF-8 (RFC 8259 section 8.1); a body declared in another charset is refused, not misread.
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/.exec(contentType)?.[1]
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && hasBody) {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'Request bodies must be JSON in UTF-8.' })
    }
    if (request.method !== 'PATCH' && contentType.startsWith(MERGE_PATCH) && request.routeOptions.schema?.body !== undefined) {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: `${MERGE_PATCH} is accepted only by PATCH.` })
    }
  })
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

/** Parses a request body; throws MALFORMED_JSON. Returns undefined for an empty body. */
export function parseJson (body: string | Buffer): unknown {
  if (typeof body !== 'string' && !isUtf8(body)) {
    throw new ApiError('MALFORMED_JSON', { message: 'The request body is not valid UTF-8.' })
  }
  let text = typeof body === 'string' ? body : body.toString('utf8')
  if (text.startsWith(BOM)) text = text.slice(1)
  if (text.trim() === '') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // Also catches a RangeError from pathologically deep nesting: still the client's fault.
    throw new ApiError('MALFORMED_JSON')
  }
  if (typeof value === 'object' && value !== null) {
    const duplicate = findDuplicateMember(text)
    if (duplicate !== undefined) {
      throw new ApiError('MALFORMED_JSON', { message: `The member ${JSON.stringify(duplicate)} appears more than once in one object.` })
    }
  }
  return value
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * The first member name given twice in one object of a JSON text JSON.parse has accepted, or
 * undefined. One pass, no recursion (any depth), strings skipped with indexOf.
 */
export function findDuplicateMember (text: string): string | undefined {
  const stack: Array<Set<string> | null> = [] // a Set of names per open object, null per array
  let expectName = false
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i
      for (;;) {
        end = text.indexOf('"', end + 1)
        let backslashes = 0
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes += 1
        if (backslashes % 2 === 0) break
      }
      if (expectName) {
        const raw = text.slice(i + 1, end)
        const name = raw.includes('\\') ? JSON.parse(text.slice(i, end + 1)) as string : raw
        const names = stack[stack.length - 1]!
        if (names.has(name)) return name
        names.add(name)
        expectName = false
      }
      i = end + 1
      continue
    }
    if (c === 0x7b) { // {
      stack.push(new Set())
      expectName = true
    } else if (c === 0x5b) { // [
      stack.push(null)
    } else if (c === 0x7d || c === 0x5d) { // } ]
      stack.pop()
    } else if (c === 0x2c) { // ,
      expectName = stack[stack.length - 1] instanceof Set
    }
    i += 1
  }
  return undefined
}
