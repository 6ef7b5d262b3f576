import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { write } from '../../src/db/write.js'

// Tokens expire after SESSION_TTL_SECONDS. An expired token is 401 like an unknown one.

const { app, close } = await buildTestApp()
const short = await buildTestApp({ SESSION_TTL_SECONDS: '1' })
after(async () => { await close(); await short.close() })

const current = (target: typeof app, headers: Record<string, string>) => target.inject({ method: 'GET', url: '/v1/sessions/current', headers })
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex')

describe('session expiry', () => {
  test('the stored expiry is the one announced at log-in', async () => {
    const user = await createUser(app)
    const announced = (await current(app, user.auth)).json().expiresAt
    const row = await app.db.selectFrom('sessions').select('expires_at').where('token_hash', '=', hashOf(user.token)).executeTakeFirstOrThrow()
    assert.equal(new Date(row.expires_at).toISOString(), announced)
  })

  test('a session whose expires_at has passed is 401 everywhere, and other sessions are unaffected', async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    await write(app.db, async (trx) => await trx.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', hashOf(user.token)).execute())
    assertError(await current(app, user.auth), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'x' } }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers: user.auth }), 401, 'AUTHENTICATION_REQUIRED')
    assert.equal((await current(app, other.auth)).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })).statusCode, 200, 'the account stays')
  })

  test('an expiry a minute ahead works; one a millisecond ago does not', async () => {
    const user = await createUser(app)
    const setExpiry = async (at: Date) => await write(app.db, async (trx) => await trx.updateTable('sessions').set({ expires_at: at.toISOString() })
      .where('token_hash', '=', hashOf(user.token)).execute())
    await setExpiry(new Date(Date.now() + 60_000))
    assert.equal((await current(app, user.auth)).statusCode, 200)
    await setExpiry(new Date(Date.now() - 1))
    assertError(await current(app, user.auth), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('logging in again after expiry gives a fresh, working token', async () => {
    const user = await createUser(app)
    await write(app.db, async (trx) => await trx.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', hashOf(user.token)).execute())
    const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    assert.equal(res.statusCode, 201)
    assert.equal((await current(app, { authorization: `Bearer ${res.json().token}` })).statusCode, 200)
  })

  test("a log-in clears the user's expired sessions, and only those", async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    const live = (await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })).json().token as string
    for (const token of [user.token, other.token]) {
      await write(app.db, async (trx) => await trx.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('token_hash', '=', hashOf(token)).execute())
    }
    await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    const remaining = async (token: string) => await app.db.selectFrom('sessions').select('id').where('token_hash', '=', hashOf(token)).executeTakeFirst()
    assert.equal(await remaining(user.token), undefined)
    assert.ok(await remaining(live), 'a live session stays')
    assert.ok(await remaining(other.token), "another user's rows are left to that user's next log-in")
  })

  test('SESSION_TTL_SECONDS=1: the token works, then stops by itself', async () => {
    const user = await createUser(short.app)
    const res = await current(short.app, user.auth)
    assert.equal(res.statusCode, 200)
    const lifetime = Date.parse(res.json().expiresAt) - Date.now()
    assert.ok(lifetime <= 1000, `announced lifetime ${lifetime} ms`)
    await sleep(1500)
    assertError(await current(short.app, user.auth), 401, 'AUTHENTICATION_REQUIRED')
  })
})
