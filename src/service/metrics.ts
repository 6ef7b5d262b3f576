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

  // One pair of labelled series per method, route pattern and status, kept (the set is bounded by
  // the route table and the statuses the API answers), so the label object is built once per
  // series, not per request; prom-client still hashes the labels on each count and observation.
  // A callback hook: no promise per request.
  const series = new Map<string, { count: Counter.Internal, time: Histogram.Internal<(typeof labelNames)[number]> }>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const key = `${request.method} ${reply.statusCode} ${route}`
    let pair = series.get(key)
    if (pair === undefined) {
      const labels = { method: request.method, route, status_code: String(reply.statusCode) }
      pair = { count: requests.labels(labels), time: duration.labels(labels) }
      series.set(key, pair)
    }
    pair.count.inc()
    pair.time.observe(reply.elapsedTime / 1000)
    done()
  })

  // Served on the private listener only (service/metrics-listener.ts); server.ts starts it.
  const listener = createMetricsListener(registry)
  app.decorate('metricsListener', listener)
  app.addHook('onClose', async () => { await listener.close() })
}, { name: 'metrics' })
