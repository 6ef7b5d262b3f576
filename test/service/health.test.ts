import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp, dialect } from '../helper.js'

// Liveness and readiness (docs/api.md). The 503 side of readiness is in
// test/pipeline/database-unavailable.test.ts.

const { app, url, close } = await buildTestApp()
after(close)

describe(`health (${dialect})`, () => {
  test('GET /health/live: 200 {status: "ok"}', async () => {
    const res = await app.inject({ method: 'GET', url: '/health/live' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.deepEqual(res.json(), { status: 'ok' })
    assert.ok(res.headers['x-request-id'])
  })

  test('GET /health/ready: 200 {status: "ok"} when the database answers', async () => {
    const res = await app.inject({ method: 'GET', url: '/health/ready' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { status: 'ok' })
  })

  test('HEAD works on both, with no body', async () => {
    for (const path of ['/health/live', '/health/ready']) {
      const res = await app.inject({ method: 'HEAD', url: path })
      assert.equal(res.statusCode, 200, path)
      assert.equal(res.body, '')
    }
  })

  test('over real HTTP, with a query string, repeatedly', async () => {
    const base = await url()
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${base}/health/ready?probe=${i}`)
      assert.equal(res.status, 200)
      assert.deepEqual(await res.json(), { status: 'ok' })
    }
  })
})
