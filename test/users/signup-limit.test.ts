import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { openDatabase } from '../../src/db/database.js'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'
import { write } from '../../src/db/write.js'

// Sign-ups per client address (SIGNUPS_PER_CLIENT_PER_HOUR=3 here), counted in the database so
// the limit holds across instances: one address cannot create accounts (and make the server
// hash passwords) as fast as it likes.

const { app, config, close } = await buildTestApp({ SIGNUPS_PER_CLIENT_PER_HOUR: '3' })
after(close)
const signUp = (remoteAddress: string, email = uniqueEmail('signup'), fields: Record<string, unknown> = {}) =>
  app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'long enough', name: 'New', ...fields }, remoteAddress })

function assertRefused (res: LightMyRequestResponse): void {
  assertError(res, 429, 'TOO_MANY_REQUESTS')
  const retryAfter = Number(res.headers['retry-after'])
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, String(res.headers['retry-after']))
  assert.equal(res.headers['ratelimit-policy'], '"signup";q=3;w=3600')
  assert.match(String(res.headers.ratelimit), /^"signup";r=0;t=[1-9][0-9]*$/)
}

describe('sign-ups per client address', () => {
  test('3 sign-ups an hour from one address; the 4th is 429; another address is not affected', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await signUp('10.3.0.1')
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.headers['ratelimit-policy'], '"signup";q=3;w=3600')
      assert.equal(res.headers.ratelimit, `"signup";r=${2 - i};t=3600`)
    }
    const email = uniqueEmail('refused')
    assertRefused(await signUp('10.3.0.1', email))
    const stored = await app.db.selectFrom('users').select('id').where('email', '=', email).execute()
    assert.equal(stored.length, 0, 'nothing was created')
    assert.equal((await signUp('10.3.0.2')).statusCode, 201)
  })

  test('an e-mail already taken counts (it bounds probing for registered e-mails); a 400 does not', async () => {
    const taken = uniqueEmail('taken')
    assert.equal((await signUp('10.3.0.3', taken)).statusCode, 201)
    assertError(await signUp('10.3.0.3', taken), 409, 'DUPLICATE_EMAIL')
    for (let i = 0; i < 5; i++) assertError(await signUp('10.3.0.3', uniqueEmail(), { name: '' }), 400, 'VALIDATION_ERROR', ['name'])
    assert.equal((await signUp('10.3.0.3')).statusCode, 201)
    assertRefused(await signUp('10.3.0.3', taken))
  })

  test('Retry-After says when the oldest sign-up of the hour leaves the window', async () => {
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString()
    await write(app.db, async (trx) => await trx.insertInto('limit_hits').values([59, 30, 10].map((m) => ({ scope: 'signup', key: '10.3.0.4', at: at(m) }))).execute())
    const res = await signUp('10.3.0.4')
    assertRefused(res)
    const retryAfter = Number(res.headers['retry-after'])
    assert.ok(retryAfter > 50 && retryAfter <= 61, `about 60 s, got ${retryAfter}`)
    await write(app.db, async (trx) => await trx.insertInto('limit_hits').values([61, 62].map((m) => ({ scope: 'signup', key: '10.3.0.5', at: at(m) }))).execute())
    assert.equal((await signUp('10.3.0.5')).statusCode, 201, 'attempts older than an hour do not count')
  })

  test('10 simultaneous sign-ups from one address: exactly 3 are created', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => signUp('10.3.0.6')))
    const statuses = results.map((r) => r.statusCode)
    assert.ok(statuses.every((s) => s === 201 || s === 429), statuses.join(','))
    assert.equal(statuses.filter((s) => s === 201).length, 3, statuses.join(','))
    for (const res of results.filter((r) => r.statusCode === 429)) assertRefused(res)
  })

  test('the limit holds across instances sharing the database', async () => {
    const second = await buildApp({ config, database: openDatabase(config.databaseUrl), logger: false })
    try {
      for (let i = 0; i < 3; i++) assert.equal((await signUp('10.3.0.7')).statusCode, 201)
      const res = await second.inject({ method: 'POST', url: '/v1/users', payload: { email: uniqueEmail(), password: 'long enough', name: 'New' }, remoteAddress: '10.3.0.7' })
      assertRefused(res)
    } finally {
      await second.close()
    }
  })
})
