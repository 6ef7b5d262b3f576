import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { COMMON_HEADERS, unlimitedErrorResponses } from '../http/schemas.js'

// GET /metrics in the Prometheus text format: request counts and latencies per route pattern
// (never the raw URL, which would give one series per id) plus the process's own metrics.
// After routing and the OpenAPI plugin, whose onRoute hooks must see the /metrics route.
export const metrics = fp(async (app) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const labelNames = ['method', 'route', 'status_code'] as const
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [registry] })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request.',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry]
  })

  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) }
    requests.inc(labels)
    duration.observe(labels, reply.elapsedTime / 1000)
  })

  app.get('/metrics', {
    schema: {
      tags: ['service'],
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      security: [],
      // The metrics are text; the errors are the usual JSON problem bodies.
      response: {
        200: { description: 'The Prometheus text exposition format.', headers: COMMON_HEADERS, content: { 'text/plain': { schema: { type: 'string' } } } },
        // Not rate-limited: the scraper is never refused.
        ...unlimitedErrorResponses()
      }
    }
  }, async (_request, reply) => {
    return await reply.type(registry.contentType).send(await registry.metrics())
  })
}, { name: 'metrics', dependencies: ['error-handler', 'routing', 'openapi'] })
