import type { FastifyContextConfig, FastifyRequest, FastifySchema } from 'fastify'

// A request's route, read cheaply. `request.routeOptions` builds a new object of twelve members
// on every read (and asks the server whether a version constraint exists), and the service reads
// the route of every request in several hooks (validation, the body parser, the rate limit,
// security headers, metrics, the access log). What it is built from is the route's context, the
// request's own property under Fastify's `fastify.context` symbol: read here directly, found
// once, nothing allocated. test/pipeline/route-context.test.ts holds it to what `routeOptions` says.

export interface RouteContext {
  /** `url`: the route's pattern (`/v1/posts/:id`); absent for a request no route matched. */
  config: FastifyContextConfig & { url?: string }
  schema?: FastifySchema
}

let contextKey: symbol | null | undefined

export function routeOf (request: FastifyRequest): RouteContext {
  if (contextKey === undefined) contextKey = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null
  const context = contextKey === null ? undefined : (request as unknown as Record<symbol, RouteContext | undefined>)[contextKey]
  if (context?.config !== undefined) return context
  // Fastify's internals changed: the public, slower way.
  const options = request.routeOptions
  return { config: { ...options.config, url: options.url }, schema: options.schema }
}
