import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

// POST /v1/users: success, representation, mass assignment, duplicates and the race.
// Field-by-field rules live in create-user-fields, -email and -unicode.

const { app, url, close } = await buildTestApp()
after(close)

const valid = () => ({ email: uniqueEmail(), password: 'correct horse', name: 'Ada' })
const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/users', payload: payload as object })
const session = async (email: string, password: string) => app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password } })

describe('POST /v1/users', () => {
  test('creates a user: 201, Location, exactly {id, email, name}', async () => {
    const body = valid()
    const res = await post(body)
    assert.equal(res.statusCode, 201)
    const user = res.json()
    assert.deepEqual(Object.keys(user).sort(), ['email', 'id', 'name'])
    assert.equal(user.email, body.email)
    assert.ok(Number.isInteger(user.id) && user.id > 0)
    assert.equal(res.headers.location, `/v1/users/${user.id}`)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const read = await app.inject({ method: 'GET', url: res.headers.location as string })
    assert.deepEqual(read.json(), { id: user.id, name: 'Ada' })
  })

  test('the e-mail is stored and returned as sent (case kept); log-in accepts any case', async () => {
    const email = `Mixed.Case.${Date.now()}@Example.COM`
    const res = await post({ ...valid(), email })
    assert.equal(res.statusCode, 201)
    assert.equal(res.json().email, email)
    assert.equal((await session(email.toLowerCase(), 'correct horse')).statusCode, 201)
    assert.equal((await session(email.toUpperCase(), 'correct horse')).statusCode, 201)
  })

  test('the list of users is an administrator\'s: anonymous GET /v1/users is 401; PUT is 405 with Allow: GET, POST', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/users' }), 401, 'AUTHENTICATION_REQUIRED')
    const res = await app.inject({ method: 'PUT', url: '/v1/users' })
    assertError(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'GET, HEAD, POST')
  })

  test('no body at all names every required field', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/users' }), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
  })

  test('an empty object names every required field', async () => {
    assertError(await post({}), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
  })

  test('the read-only id is accepted and ignored', async () => {
    const first = (await post(valid())).json()
    const res = await post({ ...valid(), id: first.id })
    assert.equal(res.statusCode, 201)
    assert.notEqual(res.json().id, first.id)
    const other = await post({ ...valid(), id: 'not even a number' })
    assert.equal(other.statusCode, 201)
  })

  test('an unknown member is rejected and nothing is created', async () => {
    for (const member of ['role', 'passwordHash', 'password_hash', 'createdAt', 'Email']) {
      const body = valid()
      assertError(await post({ ...body, [member]: 'x' }), 400, 'VALIDATION_ERROR', [member])
      // The e-mail is still free: the rejected request stored nothing.
      assert.equal((await post(body)).statusCode, 201)
    }
  })

  test('prototype-pollution members are unknown members, never applied', async () => {
    for (const [member, value] of [['__proto__', '{"role":"ADMIN"}'], ['constructor', '{"prototype":{"role":"ADMIN"}}']]) {
      const body = valid()
      const json = `{"email":${JSON.stringify(body.email)},"password":"correct horse","name":"Ada",${JSON.stringify(member)}:${value}}`
      const res = await app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json' }, payload: json })
      assertError(res, 400, 'VALIDATION_ERROR', [member!])
    }
    assert.equal(({} as Record<string, unknown>).role, undefined)
  })

  test("role: 'ADMIN' never makes an admin", async () => {
    const body = valid()
    assertError(await post({ ...body, role: 'ADMIN' }), 400, 'VALIDATION_ERROR', ['role'])
    assert.equal((await post(body)).statusCode, 201)
    const login = await session(body.email, body.password)
    assert.equal(login.json().user.role, 'USER')
    const row = await app.db.selectFrom('users').select('role').where('email', '=', body.email).executeTakeFirstOrThrow()
    assert.equal(row.role, 'USER')
  })

  test('the password and its hash appear in no response', async () => {
    const body = { ...valid(), password: 'unmistakable secret 42' }
    const created = await post(body)
    const login = await session(body.email, body.password)
    const auth = { authorization: `Bearer ${login.json().token}` }
    const id = created.json().id
    const row = await app.db.selectFrom('users').select('password_hash').where('id', '=', BigInt(id)).executeTakeFirstOrThrow()
    assert.match(row.password_hash, /^\$argon2id\$/)
    assert.ok(!row.password_hash.includes(body.password))
    const responses = [
      created, login,
      await app.inject({ method: 'GET', url: `/v1/users/${id}` }),
      await app.inject({ method: 'GET', url: `/v1/users/${id}/profile` }),
      await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: auth }),
      await app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers: auth, payload: { email: body.email, name: 'Renamed' } }),
      await post(body) // 409
    ]
    for (const res of responses) {
      assert.ok(res.statusCode < 500, res.body)
      for (const secret of [body.password, row.password_hash, '$argon2', 'password_hash', 'passwordHash']) {
        assert.ok(!res.body.includes(secret), `${res.statusCode} body leaks ${secret}`)
      }
    }
  })

  test('DUPLICATE_EMAIL, case-insensitively, and the first account is untouched', async () => {
    const body = valid()
    assert.equal((await post(body)).statusCode, 201)
    assertError(await post(body), 409, 'DUPLICATE_EMAIL')
    assertError(await post({ ...body, email: body.email.toUpperCase(), password: 'other password' }), 409, 'DUPLICATE_EMAIL')
    const res = await post({ ...body, email: body.email.replace(/^./, (c) => c.toUpperCase()) })
    assertError(res, 409, 'DUPLICATE_EMAIL')
    assert.equal(res.json().message, 'The e-mail address is already registered.')
    assert.equal((await session(body.email, body.password)).statusCode, 201)
    assertError(await session(body.email, 'other password'), 401, 'INVALID_CREDENTIALS')
  })

  test('validation comes before the duplicate check', async () => {
    const body = valid()
    assert.equal((await post(body)).statusCode, 201)
    assertError(await post({ ...body, name: '' }), 400, 'VALIDATION_ERROR', ['name'])
  })

  test('20 simultaneous creations with one e-mail over real HTTP: exactly one 201', async () => {
    const base = await url()
    const email = uniqueEmail('race')
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${base}/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: i % 2 === 0 ? email : email.toUpperCase(), password: 'correct horse', name: 'Racer' })
    })))
    const statuses = results.map((r) => r.status).sort()
    assert.equal(statuses.filter((s) => s === 201).length, 1)
    assert.equal(statuses.filter((s) => s === 409).length, 19)
    for (const r of results.filter((r) => r.status === 409)) assert.equal(((await r.json()) as { code: string }).code, 'DUPLICATE_EMAIL')
    const rows = await app.db.selectFrom('users').select('id')
      .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())).execute()
    assert.equal(rows.length, 1)
  })
})
