import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, tokenOf, uniqueEmail } from '../helper.js'

// PUT /v1/users/{id}: self only, body {email, name}; order of checks 401, 400, 404, 403, 412, 409.

const { app, close } = await buildTestApp()
after(close)

const put = (id: number | string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers, payload: payload as object })
const stored = async (id: number) => await app.db.selectFrom('users').select(['email', 'pending_email', 'name', 'updated_at']).where('id', '=', BigInt(id)).executeTakeFirstOrThrow()

describe('PUT /v1/users/{id}', () => {
  test('200 with exactly {id, email, name, emailVerified, pendingEmail} and a new ETag; a new address only waits for its proof', async () => {
    const user = await createUser(app)
    const email = uniqueEmail('renamed')
    const res = await put(user.id, { email, name: 'Renamed' }, user.auth)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { id: user.id, email: user.email, name: 'Renamed', emailVerified: false, pendingEmail: email })
    const read = await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })
    assert.deepEqual(read.json(), { id: user.id, name: 'Renamed' })
    // The PUT's tag covers the e-mail it shows; the public read's tag covers only {id, name}.
    assert.match(res.headers.etag as string, /^"[^"]+"$/)
    assert.notEqual(res.headers.etag, read.headers.etag)
    // The account still logs in with its address; the proposed one is nobody's yet.
    assert.ok(await tokenOf(app, user.email, user.password))
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password: user.password } }), 401, 'INVALID_CREDENTIALS')
    assert.equal((await createUser(app, { email })).email, email)
    // The current address (in another case) drops the proposal.
    const back = await put(user.id, { email: user.email.toUpperCase(), name: 'Renamed' }, user.auth)
    assert.deepEqual(back.json(), { id: user.id, email: user.email.toUpperCase(), name: 'Renamed', emailVerified: false, pendingEmail: null })
  })

  test('401 without a token, or with a bad one, even when the body and id are invalid', async () => {
    const user = await createUser(app)
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: `Bearer ${'A'.repeat(43)}` }, { authorization: user.token }, { authorization: `Basic ${user.token}` }] as Array<Record<string, string>>) {
      assertError(await put(user.id, { email: 5 }, headers), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await put('abc', {}, headers), 401, 'AUTHENTICATION_REQUIRED')
      const res = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: { ...headers, 'content-type': 'application/json' }, payload: '{not json' })
      assertError(res, 401, 'AUTHENTICATION_REQUIRED')
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="api"')
    }
    assert.equal((await stored(user.id)).name, user.name)
  })

  test('400 for the shape, before 404 and 403, with path and body fields together', async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    assertError(await put(987654321, { email: 'nope', name: '' }, user.auth), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put(other.id, {}, user.auth), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put('01', { email: 'nope' }, user.auth), 400, 'VALIDATION_ERROR', ['id', 'email', 'name'])
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth }), 400, 'VALIDATION_ERROR', ['email', 'name'])
  })

  test('body rules: field limits, unknown members, read-only id ignored', async () => {
    const user = await createUser(app)
    const email = user.email
    assertError(await put(user.id, { email, name: 'n'.repeat(21) }, user.auth), 400, 'VALIDATION_ERROR', ['name'])
    assertError(await put(user.id, { email, name: '   ' }, user.auth), 400, 'VALIDATION_ERROR', ['name'])
    assertError(await put(user.id, { email: 'a@b@c', name: 'x' }, user.auth), 400, 'VALIDATION_ERROR', ['email'])
    assertError(await put(user.id, { email, name: null }, user.auth), 400, 'VALIDATION_ERROR', ['name'])
    assertError(await put(user.id, { email, name: 'x', password: 'new password' }, user.auth), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await put(user.id, { email, name: 'x', role: 'ADMIN' }, user.auth), 400, 'VALIDATION_ERROR', ['role'])
    const json = `{"email":${JSON.stringify(email)},"name":"a\\u0000b"}`
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: { ...user.auth, 'content-type': 'application/json' }, payload: json }), 400, 'VALIDATION_ERROR', ['name'])
    const withId = await put(user.id, { id: user.id + 1000, email, name: 'Twenty emoji' }, user.auth)
    assert.equal(withId.statusCode, 200)
    assert.equal(withId.json().id, user.id)
    const emoji = await put(user.id, { email, name: '🙂'.repeat(20) }, user.auth)
    assert.equal(emoji.statusCode, 200)
    assert.equal(emoji.json().name, '🙂'.repeat(20))
    const me = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })
    assert.equal(me.json().user.role, 'USER')
  })

  test('404 USER_NOT_FOUND for a missing user, before the permission check', async () => {
    const user = await createUser(app)
    assertError(await put(987654321, { email: uniqueEmail(), name: 'x' }, user.auth), 404, 'USER_NOT_FOUND')
    assertError(await put('9223372036854775807', { email: uniqueEmail(), name: 'x' }, user.auth), 404, 'USER_NOT_FOUND')
  })

  test('403 ACCESS_DENIED with the generic message for another user; nothing changes', async () => {
    const user = await createUser(app)
    const victim = await createUser(app, { name: 'Victim' })
    const before = await stored(victim.id)
    const res = await put(victim.id, { email: uniqueEmail('stolen'), name: 'Hacked' }, user.auth)
    assertError(res, 403, 'ACCESS_DENIED')
    assert.equal(res.json().message, 'You do not have permission to perform this action.')
    assert.deepEqual(await stored(victim.id), before)
  })

  test('an admin may not replace another user either (self only)', async () => {
    const admin = await createAdmin(app)
    const victim = await createUser(app)
    assertError(await put(victim.id, { email: victim.email, name: 'By admin' }, admin.auth), 403, 'ACCESS_DENIED')
  })

  test('403 comes before 409: another user\'s id with a taken e-mail', async () => {
    const user = await createUser(app)
    const victim = await createUser(app)
    assertError(await put(victim.id, { email: user.email, name: 'x' }, user.auth), 403, 'ACCESS_DENIED')
  })

  test('412 PRECONDITION_FAILED with a stale If-Match, and nothing changes', async () => {
    const user = await createUser(app)
    // The tag to send is the one of the representation with the e-mail (sign-up's 201, a PUT's 200).
    const etag = (await put(user.id, { email: user.email, name: 'First' }, user.auth)).headers.etag as string
    const second = await put(user.id, { email: user.email, name: 'Second' }, { ...user.auth, 'if-match': etag })
    assert.equal(second.statusCode, 200)
    const before = await stored(user.id)
    const stale = await put(user.id, { email: uniqueEmail(), name: 'Third' }, { ...user.auth, 'if-match': etag })
    assertError(stale, 412, 'PRECONDITION_FAILED')
    assert.deepEqual(await stored(user.id), before)
    const fresh = second.headers.etag as string
    assertError(await put(user.id, { email: user.email, name: 'Third' }, { ...user.auth, 'if-match': `W/${fresh}` }), 412, 'PRECONDITION_FAILED')
    // The public read's tag does not cover the e-mail, so it cannot vouch for it.
    const publicTag = (await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })).headers.etag as string
    assertError(await put(user.id, { email: user.email, name: 'Third' }, { ...user.auth, 'if-match': publicTag }), 412, 'PRECONDITION_FAILED')
    assert.deepEqual(await stored(user.id), before)
    assert.equal((await put(user.id, { email: user.email, name: 'Fourth' }, { ...user.auth, 'if-match': fresh })).statusCode, 200)
    assert.equal((await put(user.id, { email: user.email, name: 'Fifth' }, { ...user.auth, 'if-match': '*' })).statusCode, 200)
  })

  test('a change of the e-mail alone makes an earlier If-Match stale (no lost update of the e-mail)', async () => {
    const user = await createUser(app)
    const etag = (await put(user.id, { email: user.email, name: 'Same' }, user.auth)).headers.etag as string
    const email = uniqueEmail('moved')
    assert.equal((await put(user.id, { email, name: 'Same' }, user.auth)).statusCode, 200)
    assertError(await put(user.id, { email: uniqueEmail(), name: 'Same' }, { ...user.auth, 'if-match': etag }), 412, 'PRECONDITION_FAILED')
    assert.equal((await stored(user.id)).pending_email, email)
  })

  test('412 only after 404 and 403', async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    assertError(await put(987654321, { email: uniqueEmail(), name: 'x' }, { ...user.auth, 'if-match': '"stale"' }), 404, 'USER_NOT_FOUND')
    assertError(await put(other.id, { email: uniqueEmail(), name: 'x' }, { ...user.auth, 'if-match': '"stale"' }), 403, 'ACCESS_DENIED')
  })

  test('409 DUPLICATE_EMAIL for another user\'s e-mail, in any case; nothing changes', async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    const before = await stored(user.id)
    assertError(await put(user.id, { email: other.email, name: 'x' }, user.auth), 409, 'DUPLICATE_EMAIL')
    assertError(await put(user.id, { email: other.email.toUpperCase(), name: 'x' }, user.auth), 409, 'DUPLICATE_EMAIL')
    assert.deepEqual(await stored(user.id), before)
    assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })).statusCode, 200)
  })

  test('changing only the case of your own e-mail is fine', async () => {
    const user = await createUser(app)
    const upper = user.email.toUpperCase()
    const res = await put(user.id, { email: upper, name: user.name }, user.auth)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().email, upper)
    assert.ok(await tokenOf(app, user.email, user.password))
  })

  test('10 users proposing one free e-mail at once: each 200 (a proposal takes nothing; its proof decides)', async () => {
    const users = await Promise.all(Array.from({ length: 10 }, async () => await createUser(app)))
    const wanted = uniqueEmail('wanted')
    const results = await Promise.all(users.map((u, i) => put(u.id, { email: i % 2 === 0 ? wanted : wanted.toUpperCase(), name: 'Racer' }, u.auth)))
    assert.deepEqual(results.map((r) => r.statusCode), users.map(() => 200))
    const owners = await app.db.selectFrom('users').select('id').where((eb) => eb(eb.fn('lower', ['email']), '=', wanted.toLowerCase())).execute()
    assert.equal(owners.length, 0)
  })

  test('the same body twice is idempotent', async () => {
    const user = await createUser(app)
    const body = { email: user.email, name: 'Same' }
    const a = await put(user.id, body, user.auth)
    const b = await put(user.id, body, user.auth)
    assert.deepEqual(b.json(), a.json())
  })
})
