import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, tokenOf } from '../helper.js'

// GET /v1/sessions/current and DELETE /v1/sessions/current (log out), and what counts as a
// bearer token.

const { app, close } = await buildTestApp()
after(close)

const current = (headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers })
const logOut = (headers: Record<string, string> = {}) => app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

function assertUnauthenticated (res: Awaited<ReturnType<typeof current>>): void {
  assertError(res, 401, 'AUTHENTICATION_REQUIRED')
  assert.equal(res.json().message, 'You must be logged in to perform this action.')
  assert.match(String(res.headers['www-authenticate']), /^Bearer\b/)
}

describe('GET /v1/sessions/current', () => {
  test('200 with the session: the user and expiry of the log-in, never the token', async () => {
    const user = await createUser(app, { name: 'Current' })
    const session = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    const res = await current(bearer(session.json().token))
    assert.equal(res.statusCode, 200)
    const { token, ...rest } = session.json()
    assert.equal(typeof token, 'string')
    assert.deepEqual(res.json(), rest)
    assert.deepEqual(Object.keys(res.json()).sort(), ['expiresAt', 'tokenType', 'user'])
    assert.ok(!res.body.includes(token), 'the token appears nowhere in the body')
    assert.deepEqual(res.json().user, { id: user.id, email: user.email, name: 'Current', role: 'USER', emailVerified: false, pendingEmail: null })
  })

  test('reading the session does not extend it (GET changes nothing)', async () => {
    const user = await createUser(app)
    const first = (await current(user.auth)).json().expiresAt
    const second = (await current(user.auth)).json().expiresAt
    assert.equal(second, first)
  })

  test('the user shown follows a rename', async () => {
    const user = await createUser(app)
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Renamed' } })
    assert.equal((await current(user.auth)).json().user.name, 'Renamed')
  })

  test('the auth scheme is case-insensitive (RFC 9110 section 11.1)', async () => {
    const user = await createUser(app)
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const res = await current({ authorization: `${scheme} ${user.token}` })
      assert.equal(res.statusCode, 200, scheme)
      assert.equal(res.json().user.id, user.id)
    }
  })

  test('401 AUTHENTICATION_REQUIRED for a missing, malformed or unknown token', async () => {
    const user = await createUser(app)
    const t = user.token
    const flipped = (t[0] === 'A' ? 'B' : 'A') + t.slice(1)
    const headers: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: t },
      { authorization: `Basic ${Buffer.from(`${user.email}:${user.password}`).toString('base64')}` },
      { authorization: `Token ${t}` },
      { authorization: `${t} Bearer` },
      { authorization: `Bearer ${t} extra` },
      { authorization: `Bearer ${t}x` },
      { authorization: `Bearer ${t.slice(0, -1)}` },
      { authorization: `Bearer ${flipped}` },
      { authorization: `Bearer ${'!'.repeat(43)}` },
      { authorization: `Bearer ${'a'.repeat(10_000)}` },
      { authorization: `Bearer ${createHash('sha256').update(t).digest('hex')}` },
      { authorization: `Bearer "${t}"` },
      { cookie: `token=${t}` },
      { 'x-token': t }
    ]
    for (const h of headers) assertUnauthenticated(await current(h))
    assert.equal((await current(user.auth)).statusCode, 200, 'the real token still works')
  })

  test('every 401 says the same thing, whatever was wrong', async () => {
    const user = await createUser(app)
    const bodies = new Set<string>()
    for (const h of [{}, { authorization: 'Bearer x' }, { authorization: `Bearer ${'Z'.repeat(43)}` }, { authorization: `Basic ${user.token}` }] as Array<Record<string, string>>) {
      const body = (await current(h)).json()
      bodies.add(JSON.stringify({ ...body, requestId: undefined }))
    }
    assert.equal(bodies.size, 1)
  })
})

describe('DELETE /v1/sessions/current', () => {
  test('204; the token stops working at once, everywhere', async () => {
    const user = await createUser(app)
    const res = await logOut(user.auth)
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assertUnauthenticated(await current(user.auth))
    assertUnauthenticated(await logOut(user.auth))
    assertUnauthenticated(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'x' } }))
    assertUnauthenticated(await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth }))
    const hash = createHash('sha256').update(user.token).digest('hex')
    assert.equal(await app.db.selectFrom('sessions').select('id').where('token_hash', '=', hash).executeTakeFirst(), undefined)
  })

  test("only this session ends: the user's other sessions, and the account, stay", async () => {
    const user = await createUser(app)
    const other = bearer(await tokenOf(app, user.email, user.password))
    assert.equal((await logOut(user.auth)).statusCode, 204)
    assert.equal((await current(other)).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })).statusCode, 200)
    assert.ok(await tokenOf(app, user.email, user.password))
  })

  test('401 without a valid token; nothing is revoked', async () => {
    const user = await createUser(app)
    for (const h of [{}, { authorization: 'Bearer nope' }, { authorization: `Bearer ${'Y'.repeat(43)}` }] as Array<Record<string, string>>) assertUnauthenticated(await logOut(h))
    assert.equal((await current(user.auth)).statusCode, 200)
  })

  test('other methods on /v1/sessions/current are 405 with Allow', async () => {
    const user = await createUser(app)
    const res = await app.inject({ method: 'PUT', url: '/v1/sessions/current', headers: user.auth, payload: {} })
    assertError(res, 405, 'METHOD_NOT_ALLOWED')
    assert.match(String(res.headers.allow), /DELETE/)
    assert.match(String(res.headers.allow), /GET/)
  })
})
