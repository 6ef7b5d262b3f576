import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { buildTestApp } from '../helper.js'

const { app, close } = await buildTestApp()
after(close)

test('GET /metrics: Prometheus text with per-route request counts, labelled by route pattern', async () => {
  await app.inject({ method: 'GET', url: '/v1/users/12345' })
  await app.inject({ method: 'GET', url: '/v1/users/67890' })
  await app.inject({ method: 'GET', url: '/no/such/route' })
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  assert.match(res.body, /http_requests_total\{method="GET",route="\/v1\/users\/:id",status_code="404"\} 2/)
  assert.match(res.body, /http_requests_total\{method="GET",route="unmatched",status_code="404"\} 1/)
  assert.match(res.body, /http_request_duration_seconds_bucket/)
  assert.match(res.body, /process_cpu_user_seconds_total/)
  assert.doesNotMatch(res.body, /12345|67890/)
})
