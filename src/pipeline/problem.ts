import type { FastifyReply, FastifyRequest } from 'fastify'
import { catalogue, type ApiError } from '../http/errors.js'

const PROBLEM = 'application/problem+json'

/** The q-value (0 to 1) an Accept header gives a media type, by its most specific range. */
function quality (accept: string, type: string): { q: number, exact: boolean } {
  const [major] = type.split('/')
  let best = { q: 0, specificity: -1, exact: false }
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1
    if (specificity <= best.specificity) continue
    const qParam = params.find((p) => p.startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    best = { q: Number.isFinite(q) ? Math.min(Math.max(q, 0), 1) : 0, specificity, exact: specificity === 2 }
  }
  return { q: best.q, exact: best.exact }
}

/**
 * application/problem+json when the request's Accept asks for it: named with a q-value above
 * zero, and not ranked below application/json. Otherwise (no Accept, a wildcard, application/json,
 * anything else) application/json: an error body is sent whatever the Accept, never a 406.
 */
export function problemMediaType (accept: string | undefined): string {
  if (accept === undefined || !accept.toLowerCase().includes(PROBLEM)) return 'application/json'
  const problem = quality(accept, PROBLEM)
  const json = quality(accept, 'application/json')
  return problem.exact && problem.q > 0 && problem.q >= json.q ? PROBLEM : 'application/json'
}

// Writes an ApiError as the API's error body, which is also an RFC 9457 problem object.
export function sendProblem (request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  const entry = catalogue[error.code]
  const type = problemMediaType(request.headers.accept)
  const body = {
    type: `/errors/${error.code}`,
    title: entry.title,
    status: entry.status,
    code: error.code,
    message: error.message,
    requestId: request.id,
    ...(error.errors !== undefined ? { errors: error.errors } : {}),
    ...error.details
  }
  return reply
    .code(entry.status)
    // Also set here, not only by the app's onRequest hook: errors the framework raises before
    // the hooks run (a bad URL) carry the request id too.
    .header('x-request-id', request.id)
    // And nosniff (pipeline/security-headers.ts sets it on everything else), for the same reason.
    .header('x-content-type-options', 'nosniff')
    .headers(error.headers)
    .type(`${type}; charset=utf-8`)
    // Serialised here rather than by the route's response schema, so that the error body is
    // the same whichever route (or no route) produced it.
    .serializer(JSON.stringify)
    .send(body)
}
