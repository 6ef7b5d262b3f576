import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { createMetricsListener } from './metrics-listener.js'

// Metrics in the Prometheus text format: request counts and latencies per route pattern (never
// the raw URL, which would give one series per id) plus the process's own metrics. They are
// read on a private listener of their own (METRICS_HOST:METRICS_PORT), never on the public port.
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

  // Served on the private listener only (service/metrics-listener.ts); server.ts starts it.
  const listener = createMetricsListener(registry)
  app.decorate('metricsListener', listener)
  app.addHook('onClose', async () => { await listener.close() })
}, { name: 'metrics' })
