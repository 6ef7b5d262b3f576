import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { assertError, buildTestApp, createUser, logIn, uniqueEmail } from '../helper.js'

// Failed log-ins per client address (LOGIN_FAILURES_PER_CLIENT=5), across different e-mails.

const { app, close } = await buildTestApp({ LOGIN_FAILURES_PER_EMAIL: '3', LOGIN_FAILURES_PER_CLIENT: '5' })
after(close)

const clientFailures = async (client: string) => (await app.db.selectFrom('login_failures').select('id')
  .where('client', '=', client).execute()).length

function assertThrottled (res: LightMyRequestResponse): void {
  assertError(res, 429, 'TOO_MANY_REQUESTS')
  assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/)
  assert.match(String(res.headers['ratelimit-policy']), /"login-client";q=5;w=900/)
  assert.match(String(res.headers.ratelimit), /^"login-client";r=0;t=[1-9][0-9]*$/)
}

describe('log-in throttling per client address', () => {
  test('5 failures with 5 different e-mails, then 429 for any e-mail, even the right password', async () => {
    const user = await createUser(app)
    const client = '10.2.0.1'
    for (let i = 0; i < 5; i++) assertError(await logIn(app, { email: uniqueEmail('spray'), password: 'wrong password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
    assert.equal(await clientFailures(client), 5)
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
    assertThrottled(await logIn(app, { email: uniqueEmail('spray'), password: 'wrong password' }, { remoteAddress: client }))
    assert.equal(await clientFailures(client), 5)
  })

  test('another client address is not affected', async () => {
    const user = await createUser(app)
    for (let i = 0; i < 5; i++) await logIn(app, { email: uniqueEmail('spray'), password: 'wrong password' }, { remoteAddress: '10.2.0.2' })
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: '10.2.0.2' }))
    assert.equal((await logIn(app, { email: user.email, password: user.password }, { remoteAddress: '10.2.0.3' })).statusCode, 201)
  })

  test("a success does not clear the client's count", async () => {
    const user = await createUser(app)
    const client = '10.2.0.4'
    for (let i = 0; i < 4; i++) await logIn(app, { email: uniqueEmail('spray'), password: 'wrong password' }, { remoteAddress: client })
    assert.equal((await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client })).statusCode, 201)
    assert.equal(await clientFailures(client), 4)
    assertError(await logIn(app, { email: uniqueEmail('spray'), password: 'wrong password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
    assertThrottled(await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client }))
  })

  test('20 simultaneous guesses at 20 e-mails from one client: at most 5 are checked', async () => {
    const client = '10.2.0.5'
    const results = await Promise.all(Array.from({ length: 20 }, () => logIn(app, { email: uniqueEmail('burst'), password: 'wrong password' }, { remoteAddress: client })))
    const statuses = results.map((r) => r.statusCode)
    assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','))
    assert.ok(statuses.filter((s) => s === 401).length <= 5, statuses.join(','))
    assert.ok(await clientFailures(client) <= 5)
  })

  test('the per-email limit still applies below the client limit', async () => {
    const user = await createUser(app)
    const client = '10.2.0.6'
    for (let i = 0; i < 3; i++) assertError(await logIn(app, { email: user.email, password: 'wrong password' }, { remoteAddress: client }), 401, 'INVALID_CREDENTIALS')
    const res = await logIn(app, { email: user.email, password: user.password }, { remoteAddress: client })
    assertError(res, 429, 'TOO_MANY_REQUESTS')
    assert.match(String(res.headers.ratelimit), /^"login-email";r=0;/)
  })
})
