import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { openDatabase } from '../../src/db/database.js'
import { assertError, buildTestApp, createUser, dialect } from '../helper.js'

// When the database cannot be reached, requests that need it get 503 SERVICE_UNAVAILABLE with
// Retry-After: never a 500, never a hang (docs/api.md). What needs no
// database (liveness, the index, routing, request shape) keeps answering.

// A guard so that a hang fails the test instead of blocking the run; not a timing assertion.
const NO_HANG = { timeout: 30_000 }

async function assertUnavailable (app: FastifyInstance, token: string): Promise<void> {
  const requests = [
    { method: 'GET', url: '/v1/users/1' },
    { method: 'GET', url: '/v1/users/1/profile' },
    { method: 'POST', url: '/v1/users', payload: { email: 'down@example.com', password: 'long enough', name: 'Down' } },
    { method: 'POST', url: '/v1/sessions', payload: { email: 'down@example.com', password: 'long enough' } },
    // A well-formed token cannot be checked: 503, not 401.
    { method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${token}` } },
    { method: 'GET', url: '/health/ready' }
  ] as const
  for (const request of requests) {
    const res = await app.inject(request)
    assertError(res, 503, 'SERVICE_UNAVAILABLE')
    assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/, `${request.method} ${request.url}`)
    assert.doesNotMatch(res.body, /ECONNREFUSED|destroyed|127\.0\.0\.1|select/i)
  }
}

async function assertStillAnswering (app: FastifyInstance): Promise<void> {
  const live = await app.inject({ method: 'GET', url: '/health/live' })
  assert.equal(live.statusCode, 200)
  assert.deepEqual(live.json(), { status: 'ok' })
  assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 200)
  assert.equal((await app.inject({ method: 'GET', url: '/errors/SERVICE_UNAVAILABLE' })).statusCode, 200)
  assertError(await app.inject({ method: 'GET', url: '/nowhere' }), 404, 'NOT_FOUND')
  assertError(await app.inject({ method: 'GET', url: '/v1/users/0' }), 400, 'VALIDATION_ERROR', ['id'])
  assertError(await app.inject({ method: 'GET', url: '/v1/sessions/current' }), 401, 'AUTHENTICATION_REQUIRED')
}

describe('database unavailable', () => {
  test('PostgreSQL on a closed port: 503 with Retry-After', {
    ...NO_HANG,
    skip: dialect !== 'postgres' ? 'PostgreSQL only: an embedded SQLite file has no server to be unreachable' : false
  }, async () => {
    const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unreachable' })
    const database = openDatabase(config.databaseUrl)
    // No migrations: the database is never reached.
    const app = await buildApp({ config, database, logger: false })
    await app.ready()
    try {
      await assertUnavailable(app, 'a'.repeat(43))
      await assertStillAnswering(app)
    } finally {
      await app.close()
    }
  })

  test(`the app's Kysely instance destroyed (${dialect}): 503 with Retry-After`, NO_HANG, async () => {
    const { app, close } = await buildTestApp()
    after(close)
    const user = await createUser(app)
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    assert.equal(ready.statusCode, 200)
    await app.db.destroy()
    await assertUnavailable(app, user.token)
    await assertStillAnswering(app)
  })
})
