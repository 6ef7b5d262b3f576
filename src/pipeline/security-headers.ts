import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RoutePlan } from './route-plan.js'

// Headers that protect clients from what a browser or a cache might otherwise do with our answers:
// - `X-Content-Type-Options: nosniff` on every response, so no browser reads a JSON body (which
//   echoes client text) as HTML or script;
// - `Cache-Control: no-store` on every response to an authenticated request (it may show private
//   data), on every session answer (the log-in's carries the token) and on every answer to a
//   write (a sign-up's shows the e-mail): no shared or browser cache keeps them.
// The reference at /docs gets its Content-Security-Policy from the OpenAPI plugin (DOCS_CSP).

/** Only the service's own origin: the reference's scripts, styles, images and the document it loads. */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
  // Swagger UI's stylesheet draws its icons as data: URIs (no other origin).
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'"
].join('; ')

const READS = new Set(['GET', 'HEAD'])

/** The request path's step for every answer (request-hooks.ts). */
export function protectAnswer (request: FastifyRequest, reply: FastifyReply, plan: RoutePlan): void {
  reply.header('x-content-type-options', 'nosniff')
  if (plan.noStore || request.headers.authorization !== undefined || !READS.has(request.method)) reply.header('cache-control', 'no-store')
}
