import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { hashPassword } from '../../src/users/password.js'
import { assertError, buildTestApp, dialect, login, uniqueEmail } from '../helper.js'

// Ids are 64-bit integers, matched exactly: 9007199254740993 (2^53 + 1) must never read user
// 9007199254740992 (2^53), which it would if the path went through a float. JSON.parse loses
// the difference too, so the raw response text is checked.

const { app, close } = await buildTestApp()
after(close)

const TWO_53 = 9007199254740992n
const MAX = 9223372036854775807n

const PASSWORD = 'big id password'

async function insertUserWithId (id: bigint, email: string, name: string): Promise<void> {
  const hash = await hashPassword(PASSWORD)
  const now = new Date().toISOString()
  // PostgreSQL's identity column is GENERATED ALWAYS: an explicit id needs OVERRIDING SYSTEM VALUE.
  const overriding = dialect === 'postgres' ? sql`overriding system value` : sql``
  await sql`insert into users (id, email, name, password_hash, role, created_at, updated_at) ${overriding}
    values (${id}, ${email}, ${name}, ${hash}, ${'USER'}, ${now}, ${now})`.execute(app.db)
}

const bigEmail = uniqueEmail('big')
await insertUserWithId(TWO_53, bigEmail, 'Two to the 53')
await insertUserWithId(MAX, uniqueEmail('max'), 'Max id')

describe('64-bit ids', () => {
  test('GET 9007199254740992 returns it with the exact id in the JSON text', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/users/9007199254740992' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '{"id":9007199254740992,"name":"Two to the 53"}')
  })

  test('GET 9007199254740993 is 404: no rounding through floating point', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9007199254740993' }), 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9007199254740993/profile' }), 404, 'USER_NOT_FOUND')
  })

  test('the profile of 9007199254740992 carries the exact id', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/users/9007199254740992/profile' })
    assert.equal(res.statusCode, 200)
    assert.match(res.body, /^\{"id":9007199254740992,"name":"Two to the 53","postCount":0,"createdAt":"[^"]+"\}$/)
  })

  test('the largest id, 9223372036854775807, reads back exactly', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/users/9223372036854775807' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '{"id":9223372036854775807,"name":"Max id"}')
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9223372036854775806' }), 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9223372036854775808' }), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('ETags of neighbouring big ids differ', async () => {
    const a = await app.inject({ method: 'GET', url: '/v1/users/9007199254740992' })
    const b = await app.inject({ method: 'GET', url: '/v1/users/9223372036854775807' })
    assert.notEqual(a.headers.etag, b.headers.etag)
  })

  test('the session of user 2^53 names the exact id', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: bigEmail, password: PASSWORD } })
    assert.equal(res.statusCode, 201)
    assert.match(res.body, /"user":\{"id":9007199254740992,/)
    const current = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${res.json().token}` } })
    assert.match(current.body, /"user":\{"id":9007199254740992,/)
  })

  test('user 2^53 writing to /users/9007199254740993 gets 404 and changes nothing', async () => {
    const auth = { authorization: `Bearer ${await login(app, bigEmail, PASSWORD)}` }
    const put = await app.inject({ method: 'PUT', url: '/v1/users/9007199254740993', headers: auth, payload: { email: bigEmail, name: 'Renamed' } })
    assertError(put, 404, 'USER_NOT_FOUND')
    const password = await app.inject({ method: 'PUT', url: '/v1/users/9007199254740993/password', headers: auth, payload: { currentPassword: PASSWORD, newPassword: 'another password' } })
    assertError(password, 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'DELETE', url: '/v1/users/9007199254740993', headers: auth }), 404, 'USER_NOT_FOUND')
    const row = await app.db.selectFrom('users').select('name').where('id', '=', TWO_53).executeTakeFirst()
    assert.equal(row?.name, 'Two to the 53')
    assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: auth })).statusCode, 200)
    // And the exact id is its own: the write goes through.
    const own = await app.inject({ method: 'PUT', url: '/v1/users/9007199254740992', headers: auth, payload: { email: bigEmail, name: 'Renamed' } })
    assert.equal(own.statusCode, 200)
    assert.equal(own.body, `{"id":9007199254740992,"email":"${bigEmail}","name":"Renamed"}`)
  })
})
