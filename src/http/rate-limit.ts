import fp from 'fastify-plugin'
import { ApiError } from './errors.js'

// The general per-client-IP limit (RATE_LIMIT_PER_MINUTE): a fixed one-minute window per address.
// It is a guard against a runaway client, kept in process memory: behind a load balancer each
// instance applies it on its own. (The log-in limits, which are a security control, live in the
// database; see sessions/login-throttle.ts.)

const WINDOW_MS = 60_000
const EXEMPT = /^\/(health\/|metrics$)/

interface Window { count: number, resetAt: number }

export interface RateLimitOptions {
  /** Requests per client address per minute; 0 turns the limit off. */
  perMinute: number
}

// After CORS, so that a 429 still carries the CORS headers a browser needs to read it.
export const rateLimit = fp<RateLimitOptions>(async (app, { perMinute }) => {
  if (perMinute <= 0) return
  const windows = new Map<string, Window>()
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [ip, w] of windows) if (w.resetAt <= now) windows.delete(ip)
  }, WINDOW_MS)
  sweep.unref()
  app.addHook('onClose', async () => { clearInterval(sweep) })

  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.test(request.url)) return
    const now = Date.now()
    let window = windows.get(request.ip)
    if (window === undefined || window.resetAt <= now) {
      window = { count: 0, resetAt: now + WINDOW_MS }
      windows.set(request.ip, window)
    }
    window.count += 1
    const reset = Math.max(1, Math.ceil((window.resetAt - now) / 1000))
    const headers = {
      // draft-ietf-httpapi-ratelimit-headers
      'ratelimit-policy': `"default";q=${perMinute};w=60`,
      ratelimit: `"default";r=${Math.max(0, perMinute - window.count)};t=${reset}`
    }
    if (window.count > perMinute) {
      throw new ApiError('TOO_MANY_REQUESTS', { headers: { ...headers, 'retry-after': String(reset) } })
    }
    void reply.headers(headers)
  })
}, { name: 'rate-limit', dependencies: ['error-handler', 'cors'] })
