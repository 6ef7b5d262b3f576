import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// GET /v1/users/{id}: the public representation, USER_NOT_FOUND, path id rules, ETag / 304.

const { app, close } = await buildTestApp()
after(close)

const get = (id: string | number, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `/v1/users/${id}`, headers })

const BAD_IDS = ['0', '-1', '01', '00', 'abc', '1.5', '1e3', '+1', '0x10', '1%20', '%201', '%EF%BC%91', '9223372036854775808', '99999999999999999999', '18446744073709551616']

describe('GET /v1/users/{id}', () => {
  test('200 with exactly {id, name}: no e-mail, no role, no timestamps', async () => {
    const user = await createUser(app, { name: 'Reader' })
    const res = await get(user.id)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { id: user.id, name: 'Reader' })
    assert.ok(!res.body.includes(user.email))
  })

  test('needs no authentication, and a token changes nothing', async () => {
    const user = await createUser(app)
    const anonymous = await get(user.id)
    const authed = await get(user.id, user.auth)
    assert.equal(authed.statusCode, 200)
    assert.deepEqual(authed.json(), anonymous.json())
  })

  test('404 USER_NOT_FOUND for an id nobody has', async () => {
    const res = await get(987654321)
    assertError(res, 404, 'USER_NOT_FOUND')
    assert.equal(res.json().message, 'The user does not exist.')
  })

  test('the largest 64-bit id is well-formed: 404, not 400', async () => {
    assertError(await get('9223372036854775807'), 404, 'USER_NOT_FOUND')
  })

  for (const id of BAD_IDS) {
    test(`malformed id ${id}: 400 naming id`, async () => {
      assertError(await get(id), 400, 'VALIDATION_ERROR', ['id'])
    })
  }

  test('the same id rules hold on /profile', async () => {
    for (const id of ['0', '-1', '01', 'abc', '1.5', '1e3', '9223372036854775808']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/users/${id}/profile` }), 400, 'VALIDATION_ERROR', ['id'])
    }
  })

  test('a strong ETag; If-None-Match with it gives 304 with no body', async () => {
    const user = await createUser(app)
    const first = await get(user.id)
    const etag = first.headers.etag as string
    assert.match(etag, /^"[^"]+"$/, 'a strong tag')
    assert.equal((await get(user.id)).headers.etag, etag, 'stable while nothing changes')
    for (const header of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
      const res = await get(user.id, { 'if-none-match': header })
      assert.equal(res.statusCode, 304, header)
      assert.equal(res.body, '')
      assert.equal(res.headers.etag, etag)
    }
  })

  test('a different tag in If-None-Match gives 200 with the body', async () => {
    const user = await createUser(app)
    const res = await get(user.id, { 'if-none-match': '"not-the-tag"' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { id: user.id, name: user.name })
  })

  test('the ETag changes when the user is renamed, and the old tag no longer gives 304', async () => {
    const user = await createUser(app)
    const old = (await get(user.id)).headers.etag as string
    const put = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'New Name' } })
    assert.equal(put.statusCode, 200)
    const res = await get(user.id, { 'if-none-match': old })
    assert.equal(res.statusCode, 200)
    assert.notEqual(res.headers.etag, old)
    assert.equal(res.json().name, 'New Name')
  })

  test('If-None-Match on a missing user is still 404', async () => {
    assertError(await get(987654322, { 'if-none-match': '*' }), 404, 'USER_NOT_FOUND')
  })

  test('GET changes nothing (safe method)', async () => {
    const user = await createUser(app)
    const before = await app.db.selectFrom('users').selectAll().where('id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    await get(user.id)
    await app.inject({ method: 'GET', url: `/v1/users/${user.id}/profile` })
    const afterwards = await app.db.selectFrom('users').selectAll().where('id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    assert.deepEqual(afterwards, before)
  })
})
