import type { FastifyInstance } from 'fastify'
import { ApiError } from './errors.js'
import { sendProblem } from './problem.js'

// Unknown routes: 405 with Allow when the path exists under another method, else 404. The
// path table is collected from the routes as they are registered.
export function registerNotFound (app: FastifyInstance): void {
  const routes: Array<{ pattern: RegExp, method: string }> = []
  app.addHook('onRoute', (route) => {
    const source = route.url.split('/').map((segment) =>
      segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) routes.push({ pattern: new RegExp(`^${source}$`), method })
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
    if (allowed.length > 0) {
      return sendProblem(request, reply, new ApiError('METHOD_NOT_ALLOWED', { headers: { allow: allowed.sort().join(', ') } }))
    }
    return sendProblem(request, reply, new ApiError('NOT_FOUND'))
  })
}
