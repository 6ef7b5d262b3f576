import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildAppForTest, buildTestApp } from '../helper.js'

// /metrics is served only on the private listener (METRICS_HOST:METRICS_PORT); the public port
// answers 404 there, whatever the query. The metrics show the runtime version and live counts.

const { app, close } = await buildTestApp()
after(close)
const address = await app.metricsListener.listen('127.0.0.1', 0)
const scrape = async (path = '/metrics', init: RequestInit = {}) => await fetch(`http://${address}${path}`, init)

describe('the private metrics listener', () => {
  test('Prometheus text with per-route request counts, labelled by route pattern', async () => {
    await app.inject({ method: 'GET', url: '/v1/users/12345' })
    await app.inject({ method: 'GET', url: '/v1/users/67890' })
    await app.inject({ method: 'GET', url: '/no/such/route' })
    const res = await scrape()
    assert.equal(res.status, 200)
    assert.match(String(res.headers.get('content-type')), /^text\/plain; version=0\.0\.4/)
    const body = await res.text()
    assert.match(body, /^http_requests_total\{method="GET",route="\/v1\/users\/:id",status_code="404"\} 2$/m)
    assert.match(body, /^http_requests_total\{method="GET",route="unmatched",status_code="404"\} 1$/m)
    assert.match(body, /^http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/v1\/users\/:id",status_code="404"\} 2$/m)
    assert.match(body, /^http_request_duration_seconds_count\{method="GET",route="\/v1\/users\/:id",status_code="404"\} 2$/m)
    assert.match(body, /^# TYPE http_request_duration_seconds histogram$/m)
    assert.match(body, /process_cpu_user_seconds_total/)
    // No label value carries a path's id (a number's digits elsewhere, a byte count or a start
    // time, may contain them by chance: that once failed this test on an innocent gauge).
    assert.doesNotMatch(body, /="[^"]*(?:12345|67890)[^"]*"/)
  })

  test('anything else there is our 404 (or 405) body', async () => {
    const other = await scrape('/v1/users/1')
    assert.equal(other.status, 404)
    assert.equal(((await other.json()) as { code: string }).code, 'NOT_FOUND')
    const post = await scrape('/metrics', { method: 'POST' })
    assert.equal(post.status, 405)
    assert.equal(((await post.json()) as { code: string }).code, 'METHOD_NOT_ALLOWED')
    assert.equal(post.headers.get('allow'), 'GET, HEAD')
  })
})

describe('the mail counters', () => {
  test('every mail counter shows every kind at 0 before any mail, so a first failure is a change an alert can see', async (t) => {
    const fresh = await buildAppForTest(t)
    const at = await fresh.app.metricsListener.listen('127.0.0.1', 0)
    const body = await (await fetch(`http://${at}/metrics`)).text()
    for (const name of ['mail_queued_total', 'mail_sent_total', 'mail_skipped_total', 'mail_failed_total', 'mail_send_errors_total']) {
      for (const kind of ['verify-email', 'reset-password', 'email-changed', 'password-changed', 'mfa-changed', 'identity-linked', 'api-key-created']) {
        assert.match(body, new RegExp(`^${name}\\{kind="${kind}"\\} 0$`, 'm'), `${name} for ${kind}`)
      }
    }
  })
})

describe('the public port', () => {
  test('GET /metrics is 404, with or without a query', async () => {
    for (const url of ['/metrics', '/metrics?x=1', '/metrics/', '/METRICS']) {
      assertError(await app.inject({ method: 'GET', url }), 404, 'NOT_FOUND')
    }
  })

  test('the OpenAPI document does not list /metrics', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
    assert.equal(doc.paths['/metrics'], undefined)
  })
})

describe('closing', () => {
  test('the listener closes with the app', async () => {
    const other = await buildTestApp()
    const at = await other.app.metricsListener.listen('127.0.0.1', 0)
    assert.equal((await fetch(`http://${at}/metrics`)).status, 200)
    await other.close()
    await assert.rejects(fetch(`http://${at}/metrics`))
  })
})
