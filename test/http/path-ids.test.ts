import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// Path ids: a decimal integer from 1 to 9223372036854775807, exactly; anything else is 400
// VALIDATION_ERROR on the field `id`, on every operation that takes one. (Ids above 2^53 - 1 are
// never issued, see test/db/id-range.test.ts, but they are valid in a path: 404.)

const { app, close } = await buildTestApp()
after(close)
const me = await createUser(app)

const BAD_IDS = ['0', '-1', '01', '001', '1.0', '1e3', '0x1', '+1', '%201', '1%20', '%091', '1_000', 'abc', '１', '٣',
  '9223372036854775808', '18446744073709551616', '1'.repeat(30), '%00', 'null', 'undefined', 'NaN', 'Infinity']

describe('path ids', () => {
  test('malformed or out-of-range ids are 400 on the field id', async () => {
    for (const id of BAD_IDS) {
      const res = await app.inject({ method: 'GET', url: `/v1/users/${id}` })
      assertError(res, 400, 'VALIDATION_ERROR', ['id'])
    }
  })

  test('the same on every operation that takes an id, read or write', async () => {
    const json = { 'content-type': 'application/json' }
    for (const id of ['0', '01', '1e3', '9223372036854775808']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/users/${id}/profile` }), 400, 'VALIDATION_ERROR', ['id'])
      assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${id}`, headers: me.auth }), 400, 'VALIDATION_ERROR', ['id'])
      const put = await app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers: { ...me.auth, ...json }, payload: JSON.stringify({ email: me.email, name: 'x' }) })
      assertError(put, 400, 'VALIDATION_ERROR', ['id'])
      const password = await app.inject({ method: 'PUT', url: `/v1/users/${id}/password`, headers: { ...me.auth, ...json }, payload: JSON.stringify({ currentPassword: me.password, newPassword: 'another password' }) })
      assertError(password, 400, 'VALIDATION_ERROR', ['id'])
    }
  })

  test('the largest id is valid: 404 USER_NOT_FOUND', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9223372036854775807' }), 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9223372036854775807/profile' }), 404, 'USER_NOT_FOUND')
    const put = await app.inject({ method: 'PUT', url: '/v1/users/9223372036854775807', headers: me.auth, payload: { email: me.email, name: 'x' } })
    assertError(put, 404, 'USER_NOT_FOUND')
  })

  test('a percent-encoded id is the same URL as the plain one', async () => {
    const encoded = [...String(me.id)].map((d) => `%3${d}`).join('')
    const res = await app.inject({ method: 'GET', url: `/v1/users/${encoded}` })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { id: me.id, name: me.name })
  })

  test('a query string never stands in for the id: an id in the query is refused, the path\'s is read', async () => {
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${me.id}?id=0` }), 400, 'VALIDATION_ERROR', ['id'])
    const res = await app.inject({ method: 'GET', url: `/v1/users/${me.id}?` })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().id, me.id)
  })
})
