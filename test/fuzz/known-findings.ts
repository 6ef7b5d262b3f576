import type { LightMyRequestResponse } from 'fastify'
import type { RawRequest } from './fuzz-app.js'
import type { Operation } from './openapi-operations.js'

// What the fuzzer found and is not fixed yet, each narrowly described. A response that breaks
// the document in exactly such a way is counted against its finding instead of failing the run,
// so that the fuzzing keeps looking for everything else; each finding has its own `todo` test
// that fails while the finding still occurs. A 5xx is never a known finding.

export interface Finding {
  id: string
  /** What happens, what was expected. */
  description: string
  matches: (op: Operation, request: RawRequest, res: LightMyRequestResponse) => boolean
}

const sendsBody = (request: RawRequest) => (request.payload !== undefined && request.payload.length > 0) || request.headers['content-type'] !== undefined
const code = (res: LightMyRequestResponse): string | undefined => { try { return res.json().code } catch { return undefined } }

export const FINDINGS: Finding[] = [
  {
    id: 'body-checks-on-operations-without-a-body',
    description: 'An operation that takes no request body (every GET and DELETE) still judges a body sent with it: a non-identity ' +
      'Content-Encoding or a non-UTF-8 charset is 415 UNSUPPORTED_MEDIA_TYPE, and on DELETE an unparsable body is 400 MALFORMED_JSON, a too deep or too wide one 400 VALIDATION_ERROR on `body`, ' +
      'and a non-JSON Content-Type (even with no body at all) 415 — codes the document does not list for those operations. Expected: a body the operation ' +
      'ignores is ignored (or the document lists these answers).',
    matches: (op, request, res) => op.body === undefined && op.method !== 'POST' && sendsBody(request) &&
      ((res.statusCode === 415 && code(res) === 'UNSUPPORTED_MEDIA_TYPE') ||
        (res.statusCode === 400 && code(res) === 'MALFORMED_JSON') ||
        (res.statusCode === 400 && code(res) === 'VALIDATION_ERROR' && JSON.stringify(res.json().errors).includes('"field":"body"')) ||
        (res.statusCode === 413 && code(res) === 'PAYLOAD_TOO_LARGE'))
  }
]
