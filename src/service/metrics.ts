import fp from 'fastify-plugin'
import { collectDefaultMetrics, Registry } from 'prom-client'
import { createMetricsListener } from './metrics-listener.js'
import { RequestMetrics } from './request-metrics.js'

// Metrics in the Prometheus text format: request counts and latencies per route pattern (never
// the raw URL, which would give one series per id) plus the process's own metrics. They are
// read on a private listener of their own (METRICS_HOST:METRICS_PORT), never on the public port.
export const metrics = fp(async (app) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new RequestMetrics()

  // Recorded with the access line, when the answer has gone out (pipeline/request-log.ts): no hook of its own.
  app.accessLog.metrics = requests

  // Served on the private listener only (service/metrics-listener.ts); server.ts starts it.
  const listener = createMetricsListener(registry.contentType, async () => `${await registry.metrics()}\n${requests.exposition()}`)
  app.decorate('metricsListener', listener)
  // Other parts of the service (backups/replication.ts) add their metrics here.
  app.decorate('metricsRegistry', registry)
  app.addHook('onClose', async () => { await listener.close() })
}, { name: 'metrics' })
