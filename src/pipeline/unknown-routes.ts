import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../http/errors.js'
import { sendProblem } from './problem.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Answers a request no route matched: 405 with Allow where the path exists under another method, else 404. */
    unrouted: (request: FastifyRequest, reply: FastifyReply) => FastifyReply
  }
}

// Unknown routes: 405 with Allow when the path exists under another method, else 404. The
// path table is collected from the routes as they are registered. A catch-all route (CORS's
// `OPTIONS *`) does not make every path exist; it only adds its method to a known path's Allow.
// Registered before any route (its onRoute hook sees only the routes added after it).
export const unknownRoutes = fp(async (app) => {
  const routes: Array<{ pattern: RegExp, method: string }> = []
  const everywhere: string[] = []
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (route.url === '*' || route.url === '/*') {
      everywhere.push(...methods)
      return
    }
    const source = route.url.split('/').map((segment) =>
      segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')
    for (const method of methods) routes.push({ pattern: new RegExp(`^${source}$`), method })
  })

  const notFound = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = request.url.split('?')[0] ?? ''
    const matching = routes.filter((r) => r.pattern.test(path)).map((r) => r.method)
    const allowed = matching.length === 0 ? [] : [...new Set([...matching, ...everywhere])]
    // A route that exists for this very method but found nothing (a wildcard route such as the
    // docs' static files) is a plain 404, not a 405.
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      return sendProblem(request, reply, new ApiError('METHOD_NOT_ALLOWED', { headers: { allow: allowed.sort().join(', ') } }))
    }
    return sendProblem(request, reply, new ApiError('NOT_FOUND'))
  }

  // Routing is the first check of the body's phase (request-hooks.ts; docs/decisions.md, HTTP):
  // an unknown route or method is answered before its body is read, so a bad body or content
  // type cannot turn a 404/405 into a 400/415.
  app.decorate('unrouted', notFound)
  app.setNotFoundHandler(notFound)
}, { name: 'unknown-routes', dependencies: ['error-handler'] })
