import type { FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { routeOf } from './route-context.js'

// What the request path needs to know of a route, worked out once when the route is added
// rather than on every request: its pattern, whether the general rate limit counts it, who may
// call it, whether it reads a body, and whether its answers may be kept by a cache. The
// request path's hooks (request-hooks.ts), authentication and the access line read the plan;
// none of them looks at the route's schema or pattern again.

export interface RoutePlan {
  /** The route's pattern (`/v1/posts/:id`), for the access line and the metrics; undefined where no route matched. */
  readonly route: string | undefined
  /** Never counted by the general rate limit: what a balancer, a monitor or a reader of the documentation must always reach. */
  readonly exempt: boolean
  /**
   * What the route asks of its caller, from its schema's `security`: a scope, `session` (a log-in
   * token), or undefined for a public route. Worked out by the function the plugin is given.
   */
  readonly access: string | undefined
  /** The route also opens event streams with a stream ticket (`?ticket=`) in place of the Authorization header. */
  readonly streamTickets: boolean
  /** The route reads a request body (its schema has one, or it takes a file). */
  readonly takesBody: boolean
  /** The route's body is a file (files/uploads.ts), not JSON. */
  readonly upload: boolean
  /** Every answer of the route says `Cache-Control: no-store` (a session's: the log-in's carries the token). */
  readonly noStore: boolean
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's plan, set when the route is added (pipeline/route-plan.ts). */
    plan?: RoutePlan
  }
  interface FastifyInstance {
    /** Every route's plan by `METHOD pattern` (`GET /v1/posts/:id`), to look at. */
    routePlans: ReadonlyMap<string, RoutePlan>
  }
}

/** The plan of a request that no route matched (404, 405): counted, public, no body read. */
export const UNROUTED: RoutePlan = Object.freeze({ route: undefined, exempt: false, access: undefined, streamTickets: false, takesBody: false, upload: false, noStore: false })

// File reads too: a page shows many images at once.
const EXEMPT_ROUTES = new Set(['/health/live', '/health/ready', '/openapi.json', '/v1/files/:fileId', '/v1/files/:fileId/:variant'])

const unplanned = new WeakMap<object, RoutePlan>()

/** The plan of the request's route (a route added without the plugin below, as in a bare app, gets the plan of an unknown one under its pattern). */
export function planOf (request: FastifyRequest): RoutePlan {
  const config = routeOf(request).config
  if (config.plan !== undefined) return config.plan
  if (config.url === undefined) return UNROUTED
  let plan = unplanned.get(config)
  if (plan === undefined) unplanned.set(config, plan = Object.freeze({ ...UNROUTED, route: config.url }))
  return plan
}

export interface RoutePlanOptions {
  /** What a route's `security` asks of its caller (a scope, `session`), or undefined for a public route. */
  accessOf: (security: unknown) => string | undefined
}

/** The plan of a route being added; throws for an operation of the document that declares no `security`. */
export function planRoute (route: Pick<RouteOptions, 'url' | 'method' | 'schema' | 'config'>, accessOf: RoutePlanOptions['accessOf']): RoutePlan {
  const schema = route.schema as { security?: unknown, body?: unknown, hide?: boolean } | undefined
  const config = (route.config ?? {}) as { streamTickets?: boolean, upload?: boolean }
  // Every operation the document shows says who may call it; one that says nothing would be
  // public by accident.
  if (schema !== undefined && schema.hide !== true && schema.security === undefined) {
    throw new Error(`${String(route.method)} ${route.url} declares no security: give its schema \`security: []\` (public) or what it requires`)
  }
  const url = route.url
  return Object.freeze({
    route: url,
    exempt: EXEMPT_ROUTES.has(url) || url === '/docs' || url.startsWith('/docs/'),
    access: schema === undefined ? undefined : accessOf(schema.security),
    streamTickets: config.streamTickets === true,
    takesBody: schema?.body !== undefined || config.upload === true,
    upload: config.upload === true,
    noStore: url.startsWith('/v1/sessions')
  })
}

/**
 * Gives every route added after it its plan. Registered before any route (its onRoute hook
 * sees only the routes added after it).
 */
export const routePlans = fp<RoutePlanOptions>(async (app, { accessOf }) => {
  const plans = new Map<string, RoutePlan>()
  app.decorate('routePlans', plans)
  app.addHook('onRoute', (route) => {
    const plan = planRoute(route, accessOf)
    route.config = { ...route.config, plan }
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) plans.set(`${method} ${route.url}`, plan)
  })
}, { name: 'route-plans' })
