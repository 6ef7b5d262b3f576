import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp } from '../helper.js'

const { app, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '3' })
after(close)

describe('RATE_LIMIT_PER_MINUTE', () => {
  test('the 4th request in a minute from one address is 429 with Retry-After and RateLimit fields', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'GET', url: '/v1/users/1', remoteAddress: '10.0.0.1' })
      assertError(res, 404, 'USER_NOT_FOUND')
      assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
      assert.match(String(res.headers.ratelimit), new RegExp(`^"default";r=${2 - i};t=\\d+$`))
    }
    const limited = await app.inject({ method: 'GET', url: '/v1/users/1', remoteAddress: '10.0.0.1' })
    assertError(limited, 429, 'TOO_MANY_REQUESTS')
    assert.match(String(limited.headers['retry-after']), /^[1-9]\d*$/)
    assert.ok(Number(limited.headers['retry-after']) <= 60)
    assert.match(String(limited.headers.ratelimit), /^"default";r=0;t=\d+$/)
  })

  test('another address has its own window; health checks are never limited', async () => {
    const other = await app.inject({ method: 'GET', url: '/v1/users/1', remoteAddress: '10.0.0.2' })
    assertError(other, 404, 'USER_NOT_FOUND')
    for (let i = 0; i < 5; i++) {
      const health = await app.inject({ method: 'GET', url: '/health/live', remoteAddress: '10.0.0.1' })
      assert.equal(health.statusCode, 200)
    }
  })
})
