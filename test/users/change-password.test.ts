import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, logIn, tokenOf } from '../helper.js'

// PUT /v1/users/{id}/password: self only; the current password is checked (a wrong one is 400
// VALIDATION_ERROR on `currentPassword`, never a 401: the caller is logged in); on success every
// other session of the user is revoked, this one stays.

const { app, close } = await buildTestApp()
after(close)

const change = (id: number | string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'PUT', url: `/v1/users/${id}/password`, headers, payload: payload as object })
const current = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers })
const NEW = 'a brand new password'

describe('PUT /v1/users/{id}/password', () => {
  test('204; this session keeps working, every other one is revoked; only the new password logs in', async () => {
    const user = await createUser(app)
    const other = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    const third = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    const res = await change(user.id, { currentPassword: user.password, newPassword: NEW }, user.auth)
    assert.equal(res.statusCode, 204, res.body)
    assert.equal(res.body, '')
    assert.equal((await current(user.auth)).statusCode, 200)
    assertError(await current(other), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await current(third), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await logIn(app, { email: user.email, password: user.password }), 401, 'INVALID_CREDENTIALS')
    assert.equal((await logIn(app, { email: user.email, password: NEW })).statusCode, 201)
    const rows = await app.db.selectFrom('sessions').select('id').where('user_id', '=', BigInt(user.id)).execute()
    assert.equal(rows.length, 2, 'the session that changed it and the new log-in')
  })

  test("another user's sessions are not touched", async () => {
    const user = await createUser(app)
    const bystander = await createUser(app)
    assert.equal((await change(user.id, { currentPassword: user.password, newPassword: NEW }, user.auth)).statusCode, 204)
    assert.equal((await current(bystander.auth)).statusCode, 200)
  })

  test('the new password is never trimmed', async () => {
    const user = await createUser(app)
    assert.equal((await change(user.id, { currentPassword: user.password, newPassword: '  spaced out  ' }, user.auth)).statusCode, 204)
    assertError(await logIn(app, { email: user.email, password: 'spaced out' }), 401, 'INVALID_CREDENTIALS')
    assert.equal((await logIn(app, { email: user.email, password: '  spaced out  ' })).statusCode, 201)
  })

  test('a wrong currentPassword is 400 VALIDATION_ERROR on currentPassword alone and changes nothing', async () => {
    const user = await createUser(app)
    const other = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    for (const wrong of ['wrong password', `${user.password} `, user.password.toUpperCase()]) {
      const res = await change(user.id, { currentPassword: wrong, newPassword: NEW }, user.auth)
      assertError(res, 400, 'VALIDATION_ERROR', ['currentPassword'])
      assert.deepEqual(res.json().errors, [{ field: 'currentPassword', message: 'is not your current password' }])
      assert.equal(res.headers['www-authenticate'], undefined)
    }
    assert.equal((await current(user.auth)).statusCode, 200, 'the caller stays logged in')
    assert.equal((await current(other)).statusCode, 200)
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201)
    assertError(await logIn(app, { email: user.email, password: NEW }), 401, 'INVALID_CREDENTIALS')
  })

  test('newPassword field rules', async () => {
    const user = await createUser(app)
    const cases: Array<[unknown, string[]]> = [
      ['short', ['newPassword']],
      ['p'.repeat(7), ['newPassword']],
      ['p'.repeat(51), ['newPassword']],
      ['        ', ['newPassword']],
      ['\t\n\t\n\t\n\t\n', ['newPassword']],
      ['', ['newPassword']],
      [12345678, ['newPassword']],
      [null, ['newPassword']],
      [['a long password'], ['newPassword']],
      [{ value: 'a long password' }, ['newPassword']],
      [true, ['newPassword']],
      ['🔑'.repeat(7), ['newPassword']]
    ]
    for (const [newPassword, fields] of cases) {
      assertError(await change(user.id, { currentPassword: user.password, newPassword }, user.auth), 400, 'VALIDATION_ERROR', fields)
    }
    const nul = `{"currentPassword":${JSON.stringify(user.password)},"newPassword":"new\\u0000password"}`
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: { ...user.auth, 'content-type': 'application/json' }, payload: nul }), 400, 'VALIDATION_ERROR', ['newPassword'])
    const lone = `{"currentPassword":${JSON.stringify(user.password)},"newPassword":"new password \\ud800"}`
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: { ...user.auth, 'content-type': 'application/json' }, payload: lone }), 400, 'VALIDATION_ERROR', ['newPassword'])
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201, 'unchanged')
    let password = user.password
    for (const newPassword of ['p'.repeat(8), 'q'.repeat(50), '🔑'.repeat(8)]) {
      const res = await change(user.id, { currentPassword: password, newPassword }, user.auth)
      assert.equal(res.statusCode, 204, `${newPassword}: ${res.body}`)
      password = newPassword
    }
    assert.equal((await logIn(app, { email: user.email, password: '🔑'.repeat(8) })).statusCode, 201)
  })

  test('body shape: missing members, unknown members, wrong types, all at once', async () => {
    const user = await createUser(app)
    assertError(await change(user.id, {}, user.auth), 400, 'VALIDATION_ERROR', ['currentPassword', 'newPassword'])
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: user.auth }), 400, 'VALIDATION_ERROR', ['currentPassword', 'newPassword'])
    assertError(await change(user.id, { currentPassword: 5, newPassword: 'x', password: NEW }, user.auth), 400, 'VALIDATION_ERROR', ['currentPassword', 'newPassword', 'password'])
    assertError(await change(user.id, { currentPassword: '', newPassword: NEW }, user.auth), 400, 'VALIDATION_ERROR', ['currentPassword'])
    assertError(await change(user.id, { currentPassword: '     ', newPassword: NEW }, user.auth), 400, 'VALIDATION_ERROR', ['currentPassword'])
    assertError(await change(user.id, { currentPassword: 'p'.repeat(1001), newPassword: NEW }, user.auth), 400, 'VALIDATION_ERROR', ['currentPassword'])
    assertError(await change('01', { newPassword: NEW }, user.auth), 400, 'VALIDATION_ERROR', ['id', 'currentPassword'])
  })

  test('401 without a valid token, even with an invalid body', async () => {
    const user = await createUser(app)
    for (const headers of [{}, { authorization: `Bearer ${'Q'.repeat(43)}` }, { authorization: 'Token x' }] as Array<Record<string, string>>) {
      assertError(await change(user.id, { currentPassword: user.password, newPassword: NEW }, headers), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await change(user.id, { newPassword: 1 }, headers), 401, 'AUTHENTICATION_REQUIRED')
    }
  })

  test('404 for a missing user, 403 ACCESS_DENIED for another (even with their right password)', async () => {
    const user = await createUser(app)
    const victim = await createUser(app)
    assertError(await change(987654321, { currentPassword: user.password, newPassword: NEW }, user.auth), 404, 'USER_NOT_FOUND')
    const res = await change(victim.id, { currentPassword: victim.password, newPassword: NEW }, user.auth)
    assertError(res, 403, 'ACCESS_DENIED')
    assert.equal(res.json().message, 'You do not have permission to perform this action.')
    assert.equal((await logIn(app, { email: victim.email, password: victim.password })).statusCode, 201)
    assert.equal((await current(victim.auth)).statusCode, 200)
  })

  test('the OpenAPI document lists 400 VALIDATION_ERROR and no INVALID_CREDENTIALS for the operation', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const responses = doc.paths['/v1/users/{id}/password'].put.responses
    // A response shared by several operations is a reference; an error body is the named Problem
    // narrowed to the status's codes (allOf).
    const resolve = (node: any): any => typeof node.$ref === 'string' ? doc.components.responses[node.$ref.split('/').pop()] : node
    const codes = (status: string): string[] => [...resolve(responses[status]).content['application/json'].schema.allOf[1].properties.code.enum].sort()
    assert.ok(codes('400').includes('VALIDATION_ERROR'))
    assert.deepEqual(codes('401'), ['AUTHENTICATION_REQUIRED'])
    assert.ok(!JSON.stringify(responses).includes('INVALID_CREDENTIALS'))
  })
})
