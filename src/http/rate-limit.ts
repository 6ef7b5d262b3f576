import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from './errors.js'

// The general per-client limit (RATE_LIMIT_PER_MINUTE, on by default at 600): a fixed one-minute
// window per client address, counted by @fastify/rate-limit in this instance's memory. It is a
// guard against one client taking the server for itself; behind a load balancer each instance
// applies it on its own. (The log-in and sign-up limits, which are security controls, are
// counted in the database: sessions/login-throttle.ts, users/signup-limit.ts.)
//
// The plugin counts; the answer is ours: the error body of every other error, `Retry-After` on
// the 429, and the IETF RateLimit / RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers)
// on every counted response, instead of the plugin's X-RateLimit-* headers and error.

const WINDOW_SECONDS = 60

// Exempt by route pattern, never by raw URL: what a load balancer, a monitor or a reader of the
// documentation must always reach. `/health/live?x` is the same route; `/metrics?x=1` on this
// listener is no route at all (404) and is counted like any other request.
const EXEMPT_ROUTES = new Set(['/health/live', '/health/ready', '/openapi.json'])

function isExempt (request: FastifyRequest): boolean {
  const route = request.routeOptions.url
  return route !== undefined && (EXEMPT_ROUTES.has(route) || route === '/docs' || route.startsWith('/docs/'))
}

export interface RateLimitOptions {
  /** Requests per client address per minute; 0 turns the limit off. */
  perMinute: number
}

export const rateLimit = fp<RateLimitOptions>(async (app, { perMinute }) => {
  if (perMinute <= 0) return
  // global: false — the plugin adds no hook of its own; ours below asks it to count. Its key is
  // request.ip (the forwarded client address when TRUST_PROXY names the peer), IPv6 addresses
  // grouped by /64, since one client usually holds a whole /64.
  await app.register(fastifyRateLimit, { global: false, max: perMinute, timeWindow: WINDOW_SECONDS * 1000 })
  const count = app.createRateLimit()
  const policy = `"default";q=${perMinute};w=${WINDOW_SECONDS}`

  app.addHook('onRequest', async (request, reply) => {
    if (isExempt(request)) return
    const result = await count(request)
    if (result.isAllowed) return
    const reset = Math.max(1, result.ttlInSeconds)
    const headers = { 'ratelimit-policy': policy, ratelimit: `"default";r=${result.remaining};t=${reset}` }
    if (result.isExceeded) {
      throw new ApiError('TOO_MANY_REQUESTS', { headers: { ...headers, 'retry-after': String(reset) } })
    }
    void reply.headers(headers)
  })
}, { name: 'rate-limit', dependencies: ['error-handler', 'cors'] })
