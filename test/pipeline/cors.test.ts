import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp } from '../helper.js'

// With CORS_ORIGINS set, the error contract still holds (404 stays 404, every answer is the
// API's error body) and every error carries the CORS headers, so a browser can read it.

const ORIGIN = 'https://app.example.com'
const { app, close } = await buildTestApp({ CORS_ORIGINS: ORIGIN, RATE_LIMIT_PER_MINUTE: '2' })
after(close)
const fromBrowser = { origin: ORIGIN }
let client = 0
/** A fresh client address per request, so the rate limit only bites where a test wants it. */
const fresh = () => `10.1.0.${++client}`

function assertCors (res: { headers: Record<string, unknown> }): void {
  assert.equal(res.headers['access-control-allow-origin'], ORIGIN)
  assert.match(String(res.headers['access-control-expose-headers']), /X-Request-Id/)
}

describe('CORS and the error contract', () => {
  test('an unknown path is still 404 (the CORS catch-all OPTIONS route does not make it exist)', async () => {
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const res = await app.inject({ method, url: '/nowhere', headers: { ...fromBrowser, 'content-type': 'application/json' }, payload: method === 'GET' ? undefined : '{x', remoteAddress: fresh() })
      assertError(res, 404, 'NOT_FOUND')
      assertCors(res)
    }
  })

  test('405 lists OPTIONS among the methods of a known path', async () => {
    const res = await app.inject({ method: 'PATCH', url: '/v1/users/1', headers: fromBrowser, remoteAddress: fresh() })
    assertError(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'DELETE, GET, HEAD, OPTIONS, PUT')
    assertCors(res)
  })

  test('a preflight is 204 with the allowed origin', async () => {
    const res = await app.inject({ method: 'OPTIONS', url: '/v1/users/1', headers: { ...fromBrowser, 'access-control-request-method': 'PUT' }, remoteAddress: fresh() })
    assert.equal(res.statusCode, 204)
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN)
  })

  test('the preflight allows every method of the API and the headers clients send', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const res = await app.inject({
        method: 'OPTIONS',
        url: '/v1/posts/1',
        headers: { ...fromBrowser, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, if-match' },
        remoteAddress: fresh()
      })
      assert.equal(res.statusCode, 204)
      const methods = String(res.headers['access-control-allow-methods']).split(/,\s*/)
      assert.deepEqual(methods.sort(), ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT'])
      const headers = String(res.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/)
      for (const h of ['authorization', 'content-type', 'if-match', 'if-none-match', 'idempotency-key', 'x-request-id']) assert.ok(headers.includes(h), h)
    }
  })

  test('a plain OPTIONS (no Origin) is not a text/plain 400', async () => {
    const res = await app.inject({ method: 'OPTIONS', url: '/v1/users/1', remoteAddress: fresh() })
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
  })

  test('errors carry the CORS headers: 400, 401, 415', async () => {
    const answers = [
      [await app.inject({ method: 'GET', url: '/v1/users/0', headers: fromBrowser, remoteAddress: fresh() }), 400, 'VALIDATION_ERROR'],
      [await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: fromBrowser, remoteAddress: fresh() }), 401, 'AUTHENTICATION_REQUIRED'],
      [await app.inject({ method: 'POST', url: '/v1/users', headers: { ...fromBrowser, 'content-type': 'text/plain' }, payload: 'x', remoteAddress: fresh() }), 415, 'UNSUPPORTED_MEDIA_TYPE']
    ] as const
    for (const [res, status, code] of answers) {
      assertError(res, status, code)
      assertCors(res)
    }
  })

  test('the rate limit\'s 429 carries the CORS headers', async () => {
    const address = fresh()
    for (let i = 0; i < 2; i++) await app.inject({ method: 'GET', url: '/v1/users/1', headers: fromBrowser, remoteAddress: address })
    const limited = await app.inject({ method: 'GET', url: '/v1/users/1', headers: fromBrowser, remoteAddress: address })
    assertError(limited, 429, 'TOO_MANY_REQUESTS')
    assertCors(limited)
  })

  test('another origin gets no Access-Control-Allow-Origin', async () => {
    const res = await app.inject({ method: 'GET', url: '/nowhere', headers: { origin: 'https://evil.example.com' }, remoteAddress: fresh() })
    assertError(res, 404, 'NOT_FOUND')
    assert.equal(res.headers['access-control-allow-origin'], undefined)
  })
})
