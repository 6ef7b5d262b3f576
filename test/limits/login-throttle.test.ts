import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { openDatabase } from '../../src/db/database.js'
import { assertError, buildTestApp, createUser, logIn, uniqueEmail } from '../helper.js'
import { write } from '../../src/db/write.js'

// Failed log-ins per e-mail from one client address (LOGIN_FAILURES_PER_EMAIL=3): past the limit
// 429 with Retry-After and the RateLimit fields, whatever the password; another address is not
// refused by it. Counts live in the database. Each test uses its own client address so the
// per-client limit stays out of the way (the per-account one is, by the helper's defaults).

const { app, config, close } = await buildTestApp({ LOGIN_FAILURES_PER_EMAIL: '3', LOGIN_FAILURES_PER_CLIENT: '100' })
after(close)

let clients = 0
const newClient = () => { clients += 1; return `10.1.0.${clients}` }
const emailFailures = async (email: string) => (await app.db.selectFrom('login_failures').select('id')
  .where('email', '=', email.toLowerCase()).execute()).length

function assertThrottled (res: LightMyRequestResponse): void {
  assertError(res, 429, 'TOO_MANY_REQUESTS')
  const retryAfter = String(res.headers['retry-after'])
  assert.match(retryAfter, /^[1-9][0-9]*$/, 'Retry-After is a positive integer of seconds')
  assert.ok(Number(retryAfter) <= 900)
  assert.match(String(res.headers['ratelimit-policy']), /"login-email";q=3;w=900/)
  assert.match(String(res.headers.ratelimit), /^"login-[a-z]+";r=0;t=[1-9][0-9]*$/)
}

describe('log-in throttling per e-mail', () => {
  test('3 failures are 401; the 4th attempt from that address is 429 even with the right password', async () => {
    const user = await createUser(app)
    const client = newClient()
    for (let i = 1; i <= 3; i++) {
      const res = await logIn(app, { email: user.email, password: `wrong password ${i}` }, { remoteAddress: client })
      assertError(res, 401, 'INVALID_CREDENTIALS')
      assert.match(String(res.headers.ratelimit), new RegExp(`^"login-email";r=${3 - i};t=\\d+$`))
    }
    assertThrottled(await logIn(app, { email: user.email, password: 'wrong password 4' }, { remoteAddress: client }))
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
    assertThrottled(await logIn(app, { email: user.email.toUpperCase(), password: user.password }, { remoteAddress: client }))
    assert.equal(await emailFailures(user.email), 3, 'refused attempts are not counted again')
    // The limit is per address: the user, elsewhere, still logs in.
    assert.equal((await logIn(app, { email: user.email, password: user.password }, { remoteAddress: newClient() })).statusCode, 201)
  })

  test('the success before the limit carries the RateLimit fields', async () => {
    const user = await createUser(app)
    const res = await logIn(app, { email: user.email, password: user.password }, { remoteAddress: newClient() })
    assert.equal(res.statusCode, 201)
    assert.match(String(res.headers['ratelimit-policy']), /"login-email";q=3;w=900/)
    assert.match(String(res.headers.ratelimit), /^"login-[a-z]+";r=\d+;t=\d+$/)
  })

  test('other e-mails are not affected', async () => {
    const blocked = await createUser(app)
    const other = await createUser(app)
    const client = newClient()
    for (let i = 0; i < 3; i++) await logIn(app, { email: blocked.email, password: 'wrong password' }, { remoteAddress: client })
    assertThrottled(await logIn(app, { email: blocked.email, password: blocked.password }, { remoteAddress: client }))
    assert.equal((await logIn(app, { email: other.email, password: other.password }, { remoteAddress: client })).statusCode, 201)
  })

  test('the count is kept in the database, by lower-cased e-mail, and a success clears it', async () => {
    const user = await createUser(app, { email: uniqueEmail('Counted') })
    const client = newClient()
    await logIn(app, { email: user.email, password: 'wrong password' }, { remoteAddress: client })
    await logIn(app, { email: user.email.toUpperCase(), password: 'wrong password' }, { remoteAddress: client })
    assert.equal(await emailFailures(user.email), 2)
    const rows = await app.db.selectFrom('login_failures').selectAll().where('email', '=', user.email).execute()
    assert.equal(rows.length, 0, 'keys are lower-cased')
    assert.equal((await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client })).statusCode, 201)
    assert.equal(await emailFailures(user.email), 0)
    for (let i = 0; i < 3; i++) assertError(await logIn(app, { email: user.email, password: 'wrong password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
  })

  test('unknown e-mails are counted the same way (no way to tell them apart)', async () => {
    const ghost = uniqueEmail('ghost')
    const client = newClient()
    for (let i = 0; i < 3; i++) assertError(await logIn(app, { email: ghost, password: 'any password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
    assertThrottled(await logIn(app, { email: ghost, password: 'any password' }, { remoteAddress: client }))
    assert.equal(await emailFailures(ghost), 3)
  })

  test('a wrong currentPassword on PUT /users/{id}/password counts as a failed log-in', async () => {
    const user = await createUser(app)
    const client = newClient()
    const change = (currentPassword: string) => app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: user.auth, payload: { currentPassword, newPassword: 'a new password' }, remoteAddress: client })
    for (let i = 0; i < 3; i++) assertError(await change('wrong password'), 400, 'VALIDATION_ERROR', ['currentPassword'])
    assert.equal(await emailFailures(user.email), 3)
    assertThrottled(await change(user.password))
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
  })

  test('failures older than 15 minutes no longer count; Retry-After says when the oldest ages out', async () => {
    const user = await createUser(app)
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString()
    const email = user.email.toLowerCase()
    const client = newClient()
    await write(app.db, async (trx) => await trx.insertInto('login_failures').values([16, 17, 30].map((m) => ({ email, client, failed_at: at(m) }))).execute())
    assert.equal((await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client })).statusCode, 201)
    await write(app.db, async (trx) => await trx.insertInto('login_failures').values([14, 10, 5].map((m) => ({ email, client, failed_at: at(m) }))).execute())
    const res = await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client })
    assertThrottled(res)
    const retryAfter = Number(res.headers['retry-after'])
    assert.ok(retryAfter > 50 && retryAfter <= 61, `the failure 14 minutes old frees a slot in about 60 s, got ${retryAfter}`)
  })

  test('failures that left the window are deleted for every e-mail and address, not only the one trying', async () => {
    const old = new Date(Date.now() - 16 * 60_000).toISOString()
    await write(app.db, async (trx) => await trx.insertInto('login_failures').values([
      { email: 'gone-for-good@example.com', client: '203.0.113.98', failed_at: old },
      { email: 'gone-too@example.com', client: '203.0.113.99', failed_at: old }
    ]).execute())
    assertError(await logIn(app, { email: 'someone-else@example.com', password: 'wrong password' }, { remoteAddress: newClient() }), 401, 'INVALID_CREDENTIALS')
    const left = await app.db.selectFrom('login_failures').select('email').where('failed_at', '<=', old).execute()
    assert.deepEqual(left, [])
  })

  test('20 simultaneous wrong guesses: at most 3 are checked, the rest are 429', async () => {
    const user = await createUser(app)
    const client = newClient()
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => logIn(app, { email: user.email, password: `guess ${i}` }, { remoteAddress: client })))
    const statuses = results.map((r) => r.statusCode)
    assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','))
    const checked = statuses.filter((s) => s === 401).length
    assert.ok(checked <= 3, statuses.join(','))
    assert.equal(await emailFailures(user.email), checked, 'every checked guess is counted, no refused one is')
    // Whatever the burst left over can still be used, one by one, and not a guess more.
    let more = 0
    for (;;) {
      const res = await logIn(app, { email: user.email, password: 'one more guess' }, { remoteAddress: client })
      if (res.statusCode === 429) break
      assertError(res, 401, 'INVALID_CREDENTIALS')
      more += 1
    }
    assert.equal(checked + more, 3)
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
  })

  test('the limit holds across instances sharing the database', async () => {
    const user = await createUser(app)
    const second = await buildApp({ config, database: openDatabase(config.databaseUrl), logger: false })
    try {
      const client = newClient()
      for (let i = 0; i < 3; i++) assertError(await logIn(app, { email: user.email, password: 'wrong password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
      const res = await second.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password }, remoteAddress: client })
      assertThrottled(res)
    } finally {
      await second.close()
    }
  })
})
