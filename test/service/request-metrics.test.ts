import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { Counter, Histogram, Registry } from 'prom-client'
import { DURATION_BOUNDS, RequestMetrics } from '../../src/service/request-metrics.js'

// The request metrics are counted in place instead of through prom-client's Counter and
// Histogram (which hash the labels on every call); what a scraper reads must not change.

// What prom-client renders for the same requests: the reference.
async function promClientExposition (requests: Array<[string, string, number, number]>): Promise<string> {
  const registry = new Registry()
  const labelNames = ['method', 'route', 'status_code'] as const
  const counter = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [registry] })
  const histogram = new Histogram({ name: 'http_request_duration_seconds', help: 'Time to answer an HTTP request.', labelNames, buckets: [...DURATION_BOUNDS], registers: [registry] })
  for (const [method, route, status, seconds] of requests) {
    const labels = { method, route, status_code: String(status) }
    counter.inc(labels)
    histogram.observe(labels, seconds)
  }
  return await registry.metrics()
}

function ours (requests: Array<[string, string, number, number]>): string {
  const metrics = new RequestMetrics()
  for (const [method, route, status, seconds] of requests) metrics.record(method, route, status, seconds)
  return metrics.exposition()
}

describe('request metrics', () => {
  test('render exactly what prom-client renders for the same requests', async () => {
    const request = fc.tuple(
      fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE'),
      fc.constantFrom('/v1/posts/:id', '/v1/posts', 'unmatched', '/v1/users/:id/orders', 'a"b\\c\nd'),
      fc.constantFrom(200, 201, 204, 304, 400, 404, 429, 500),
      fc.oneof(fc.double({ min: 0, max: 20, noNaN: true }), fc.constantFrom(...DURATION_BOUNDS))
    )
    await fc.assert(fc.asyncProperty(fc.array(request, { maxLength: 60 }), async (requests) => {
      assert.equal(ours(requests), await promClientExposition(requests))
    }), { numRuns: 300 })
  })

  test('a latency equal to a bound counts in that bucket; one above every bound only in +Inf', () => {
    const text = ours([['GET', '/v1/posts/:id', 200, 0.005], ['GET', '/v1/posts/:id', 200, 7]])
    const labels = 'method="GET",route="/v1/posts/:id",status_code="200"'
    assert.match(text, new RegExp(`^http_request_duration_seconds_bucket\\{le="0\\.005",${labels}\\} 1$`, 'm'))
    assert.match(text, new RegExp(`^http_request_duration_seconds_bucket\\{le="5",${labels}\\} 1$`, 'm'))
    assert.match(text, new RegExp(`^http_request_duration_seconds_bucket\\{le="\\+Inf",${labels}\\} 2$`, 'm'))
    assert.match(text, new RegExp(`^http_request_duration_seconds_sum\\{${labels}\\} 7\\.005$`, 'm'))
    assert.match(text, new RegExp(`^http_requests_total\\{${labels}\\} 2$`, 'm'))
  })

  test('label values are escaped as the text format requires', () => {
    const text = ours([['GET', 'a"b\\c\nd', 200, 0.001]])
    assert.match(text, /^http_requests_total\{method="GET",route="a\\"b\\\\c\\nd",status_code="200"\} 1$/m)
  })

  test('with no requests, only the HELP and TYPE lines', () => {
    assert.equal(ours([]), [
      '# HELP http_requests_total HTTP requests answered.',
      '# TYPE http_requests_total counter',
      '',
      '# HELP http_request_duration_seconds Time to answer an HTTP request.',
      '# TYPE http_request_duration_seconds histogram',
      ''
    ].join('\n'))
  })
})
