import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, tokenOf } from '../helper.js'

// DELETE /v1/users/{id}: self only; the sessions go with the user at once; the e-mail becomes free.

const { app, close } = await buildTestApp()
after(close)

const del = (id: number | string, headers: Record<string, string> = {}) => app.inject({ method: 'DELETE', url: `/v1/users/${id}`, headers })
const current = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers })
const exists = async (id: number) => (await app.db.selectFrom('users').select('id').where('id', '=', BigInt(id)).executeTakeFirst()) !== undefined

describe('DELETE /v1/users/{id}', () => {
  test('204 with an empty body; the user is gone', async () => {
    const user = await createUser(app)
    const res = await del(user.id, user.auth)
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${user.id}` }), 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${user.id}/profile` }), 404, 'USER_NOT_FOUND')
    assert.equal(await exists(user.id), false)
  })

  test('every session of the user stops working at once, and their rows are gone', async () => {
    const user = await createUser(app)
    const second = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    assert.equal((await current(second)).statusCode, 200)
    assert.equal((await del(user.id, user.auth)).statusCode, 204)
    assertError(await current(user.auth), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await current(second), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await del(user.id, second), 401, 'AUTHENTICATION_REQUIRED')
    const rows = await app.db.selectFrom('sessions').select('id').where('user_id', '=', BigInt(user.id)).execute()
    assert.equal(rows.length, 0)
  })

  test('the old credentials no longer log in', async () => {
    const user = await createUser(app)
    assert.equal((await del(user.id, user.auth)).statusCode, 204)
    const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    assertError(res, 401, 'INVALID_CREDENTIALS')
  })

  test('the e-mail becomes free: re-registering works, in any case, with a new id', async () => {
    const user = await createUser(app)
    assert.equal((await del(user.id, user.auth)).statusCode, 204)
    const again = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: user.email.toUpperCase(), password: 'a new password', name: 'Again' } })
    assert.equal(again.statusCode, 201, again.body)
    assert.notEqual(again.json().id, user.id)
    assert.ok(await tokenOf(app, user.email, 'a new password'))
  })

  test('401 without a valid token, whatever the id', async () => {
    const user = await createUser(app)
    for (const headers of [{}, { authorization: 'Bearer' }, { authorization: `Bearer ${'Z'.repeat(43)}` }] as Array<Record<string, string>>) {
      assertError(await del(user.id, headers), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await del('abc', headers), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await del(987654321, headers), 401, 'AUTHENTICATION_REQUIRED')
    }
    assert.equal(await exists(user.id), true)
  })

  test('403 ACCESS_DENIED for another user (admins too); the other user stays', async () => {
    const user = await createUser(app)
    const victim = await createUser(app)
    const admin = await createAdmin(app)
    for (const caller of [user, admin]) {
      const res = await del(victim.id, caller.auth)
      assertError(res, 403, 'ACCESS_DENIED')
      assert.equal(res.json().message, 'You do not have permission to perform this action.')
    }
    assert.equal(await exists(victim.id), true)
    assert.equal((await current(victim.auth)).statusCode, 200)
  })

  test('404 USER_NOT_FOUND for a missing user; 400 for a malformed id', async () => {
    const user = await createUser(app)
    assertError(await del(987654321, user.auth), 404, 'USER_NOT_FOUND')
    assertError(await del('9223372036854775807', user.auth), 404, 'USER_NOT_FOUND')
    for (const id of ['0', '-1', '01', '1.5', '1e3', '9223372036854775808']) {
      assertError(await del(id, user.auth), 400, 'VALIDATION_ERROR', ['id'])
    }
  })

  test('a stale If-Match is 412 and the user stays; the current tag deletes', async () => {
    const user = await createUser(app)
    // The current tag is the one of the representation with the e-mail (here from a PUT's 200).
    const replaced = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: user.name } })
    const etag = replaced.headers.etag as string
    assertError(await del(user.id, { ...user.auth, 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED')
    assert.equal(await exists(user.id), true)
    assert.equal((await current(user.auth)).statusCode, 200)
    assert.equal((await del(user.id, { ...user.auth, 'if-match': etag })).statusCode, 204)
    assert.equal(await exists(user.id), false)
  })

  test('a second DELETE with the same token is 401 (the session went with the user)', async () => {
    const user = await createUser(app)
    assert.equal((await del(user.id, user.auth)).statusCode, 204)
    assertError(await del(user.id, user.auth), 401, 'AUTHENTICATION_REQUIRED')
  })

  test("deleting one user leaves the others' sessions alone", async () => {
    const user = await createUser(app)
    const bystander = await createUser(app)
    assert.equal((await del(user.id, user.auth)).statusCode, 204)
    assert.equal((await current(bystander.auth)).statusCode, 200)
  })
})
