import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, tokenOf, type TestUser } from '../helper.js'

// DELETE /v1/users/{id}/sessions: every session of the user ends at once (the caller's own when
// it is theirs), by the user or an administrator; API keys stay; everyone else is refused and
// nothing changes.

const { app, close } = await buildTestApp()
after(close)

const end = async (id: number | string, headers: Record<string, string>) => await app.inject({ method: 'DELETE', url: `/v1/users/${id}/sessions`, headers })
const current = async (headers: Record<string, string>) => (await app.inject({ method: 'GET', url: '/v1/sessions/current', headers })).statusCode
const sessionsOf = async (id: number) => (await app.db.selectFrom('sessions').select('id').where('user_id', '=', BigInt(id)).execute()).length

/** A user with a second session (another device) and an API key. */
async function withDevices (): Promise<{ user: TestUser, second: Record<string, string>, key: Record<string, string> }> {
  const user = await createUser(app)
  const second = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
  const made = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'bot', scopes: ['posts:write'] } })
  assert.equal(made.statusCode, 201, made.body)
  return { user, second, key: { authorization: `Bearer ${made.json().key as string}` } }
}

const keyWorks = async (key: Record<string, string>) => (await app.inject({ method: 'POST', url: '/v1/posts', headers: key, payload: { title: 'still', content: 'here' } })).statusCode === 201

describe('DELETE /v1/users/{id}/sessions', () => {
  test('the user: 204, every session ends, this one included; the API key stays; the password still logs in', async () => {
    const { user, second, key } = await withDevices()
    const res = await end(user.id, user.auth)
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assert.equal(await current(user.auth), 401)
    assert.equal(await current(second), 401)
    assert.equal(await sessionsOf(user.id), 0)
    assert.ok(await keyWorks(key))
    assert.ok(await tokenOf(app, user.email, user.password))
  })

  test('an administrator: 204, the user\'s sessions end, the administrator\'s stays, nobody else\'s changes', async () => {
    const admin = await createAdmin(app)
    const { user, second, key } = await withDevices()
    const bystander = await createUser(app)
    assert.equal((await end(user.id, admin.auth)).statusCode, 204)
    assert.equal(await current(user.auth), 401)
    assert.equal(await current(second), 401)
    assert.equal(await current(admin.auth), 200)
    assert.equal(await current(bystander.auth), 200)
    assert.ok(await keyWorks(key))
    // A user with no session left: still 204.
    assert.equal((await end(user.id, admin.auth)).statusCode, 204)
  })

  test('anyone else, keys, unknown and malformed ids: each with its status and code, and no session ends', async () => {
    const admin = await createAdmin(app)
    const { user, key } = await withDevices()
    const other = await createUser(app)
    assertError(await end(user.id, other.auth), 403, 'ACCESS_DENIED')
    assertError(await end(admin.id, user.auth), 403, 'ACCESS_DENIED')
    assertError(await end(user.id, key), 403, 'INSUFFICIENT_SCOPE')
    assertError(await end(user.id, {}), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await end(user.id, { authorization: `Bearer ${'Z'.repeat(43)}` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await end('9007199254740991', admin.auth), 404, 'USER_NOT_FOUND')
    assertError(await end('9007199254740991', user.auth), 404, 'USER_NOT_FOUND')
    assertError(await end('abc', admin.auth), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await end('0', admin.auth), 400, 'VALIDATION_ERROR', ['id'])
    assert.equal(await sessionsOf(user.id), 2)
    assert.equal(await current(user.auth), 200)
    assert.equal(await current(admin.auth), 200)
  })
})
