import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { clientKey, clientOf } from '../http/client-address.js'
import { ApiError } from '../http/errors.js'
import { planOf } from './route-plan.js'

// The general per-client limit (RATE_LIMIT_PER_MINUTE, on by default at 600): a fixed one-minute
// window per client address, counted in this instance's memory. It is a guard against one
// client taking the server for itself; behind a load balancer each instance applies it on its
// own. (The log-in and sign-up limits, which are security controls, are counted in the
// database: limits/login-throttle.ts, limits/sliding-window.ts.)
//
// The answer: the error body of every other error, `Retry-After` on the 429, and the IETF
// RateLimit / RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers) on every counted
// response.
//
// Counted here rather than by @fastify/rate-limit, which this service used before: the plugin
// ran an async function, a promise around its store and a regular-expression test of the
// address on every request; turning it off gave a single-resource read about a sixth more
// throughput in the bench (docs/decisions.md, Performance). What it did for this service fits in the counter
// below: a window per key that starts at the key's first request, and a bounded store.

const WINDOW_SECONDS = 60
const WINDOW_MS = WINDOW_SECONDS * 1000

/**
 * Most clients remembered at once (about 100 bytes each). Past it, the client whose window
 * started first is forgotten (its window has most likely ended): memory stays bounded whatever
 * number of addresses a flood comes from.
 */
export const MAX_CLIENTS = 100_000

interface Window { count: number, endsAt: number }

/** Fixed windows per key in a bounded Map (insertion order: the oldest window first). */
export class FixedWindows {
  private readonly windows = new Map<string, Window>()
  private readonly capacity: number

  constructor (capacity = MAX_CLIENTS) {
    this.capacity = capacity
  }

  /** Counts one request of `key` at `now` (ms); returns its window. */
  hit (key: string, now: number): Window {
    let window = this.windows.get(key)
    if (window === undefined || window.endsAt <= now) {
      if (window !== undefined) this.windows.delete(key)
      else if (this.windows.size >= this.capacity) this.windows.delete(this.windows.keys().next().value!)
      window = { count: 0, endsAt: now + WINDOW_MS }
      this.windows.set(key, window)
    }
    window.count++
    return window
  }

  /** Whether one more request of `key` at `now` would go past `limit` (nothing is counted). */
  full (key: string, now: number, limit: number): boolean {
    const window = this.windows.get(key)
    return window !== undefined && window.endsAt > now && window.count >= limit
  }

  get size (): number { return this.windows.size }
}

export interface RateLimitOptions {
  /** Requests per client address per minute; 0 turns the limit off. */
  perMinute: number
  /** Requests counted by someone else, through `app.rateLimiter` (authentication counts a request made with an API key in the key's window). */
  countedElsewhere?: (request: FastifyRequest) => boolean
}

/**
 * The counters, for authentication: a request made with an API key counts in the key's own
 * window, once the key is found (a made-up key cannot buy a window of its own: an unknown key
 * counts in its address's). Each call counts one request, sets the RateLimit fields on the
 * reply, and throws the 429 past the limit.
 */
export interface RateLimiter {
  /**
   * The request path's step (request-hooks.ts): counts the request in its address's window unless
   * its route is exempt (health, docs, the OpenAPI document: by route pattern, never by raw URL,
   * so `/metrics?x=1` on this listener is no route and is counted) or authentication counts it.
   * Returns the 429 past the limit.
   */
  countRequest: (request: FastifyRequest, reply: FastifyReply) => ApiError | undefined
  countAddress: (request: FastifyRequest, reply: FastifyReply | undefined) => void
  countKey: (request: FastifyRequest, reply: FastifyReply | undefined, keyId: bigint) => void
  /**
   * For a read answered before Fastify's request path (fast-reads.ts): counts one request in the
   * window of this client address and returns the RateLimit field's value to send beside
   * `policy`, or, when the request would go past the limit, counts nothing and returns undefined
   * (the request path then counts it and refuses it).
   */
  countWithin: (address: string) => string | undefined
  /** The RateLimit-Policy field's value, the same on every answer. */
  policy: string
}

export const rateLimit = fp<RateLimitOptions>(async (app, { perMinute, countedElsewhere = () => false }) => {
  if (perMinute <= 0) {
    app.decorate('rateLimiter', undefined)
    return
  }
  const windows = new FixedWindows()
  const policy = `"default";q=${perMinute};w=${WINDOW_SECONDS}`

  /** Seconds until the window ends, at least 1. */
  const resetOf = (window: { endsAt: number }, now: number): number => Math.max(1, Math.ceil((window.endsAt - now) / 1000))
  /** The RateLimit field: what is left of the window and when it ends. */
  const fieldOf = (window: { count: number }, reset: number): string => `"default";r=${Math.max(0, perMinute - window.count)};t=${reset}`

  /** Counts a request in `key`'s window: the error past the limit, else undefined (headers set). */
  function count (key: string, reply: FastifyReply | undefined): ApiError | undefined {
    const now = Date.now()
    const window = windows.hit(key, now)
    const reset = resetOf(window, now)
    const headers = { 'ratelimit-policy': policy, ratelimit: fieldOf(window, reset) }
    if (window.count > perMinute) return new ApiError('TOO_MANY_REQUESTS', { headers: { ...headers, 'retry-after': String(reset) } })
    reply?.headers(headers)
    return undefined
  }
  app.decorate('rateLimiter', {
    countRequest (request: FastifyRequest, reply: FastifyReply) {
      if (planOf(request).exempt || countedElsewhere(request)) return undefined
      return count(clientOf(request), reply)
    },
    countAddress (request: FastifyRequest, reply: FastifyReply | undefined) {
      const error = count(clientOf(request), reply)
      if (error !== undefined) throw error
    },
    countKey (_request: FastifyRequest, reply: FastifyReply | undefined, keyId: bigint) {
      const error = count(`key ${keyId}`, reply)
      if (error !== undefined) throw error
    },
    countWithin (address: string) {
      const key = clientKey(address)
      const now = Date.now()
      if (windows.full(key, now, perMinute)) return undefined
      const window = windows.hit(key, now)
      return fieldOf(window, resetOf(window, now))
    },
    policy
  })
}, { name: 'rate-limit', dependencies: ['error-handler', 'cors'] })
