import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { prepareDummyHash, verifyAgainstDummy } from '../../src/users/password.js'
import { assertError, buildTestApp, createUser, logIn, uniqueEmail } from '../helper.js'

// POST /v1/sessions: log in. The representation, the token, and failures that say nothing
// about which part of the check failed.

const { app, close } = await buildTestApp()
after(close)

const TOKEN = /^[A-Za-z0-9_-]{43,}$/

describe('POST /v1/sessions', () => {
  test('201 with exactly {token, tokenType, expiresAt, user: {id, email, name, role, emailVerified, pendingEmail}}', async () => {
    const user = await createUser(app, { name: 'Logger' })
    const before = Date.now()
    const res = await logIn(app, { email: user.email, password: user.password })
    const afterwards = Date.now()
    assert.equal(res.statusCode, 201)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['expiresAt', 'token', 'tokenType', 'user'])
    assert.equal(body.tokenType, 'Bearer')
    assert.deepEqual(body.user, { id: user.id, email: user.email, name: 'Logger', role: 'USER', emailVerified: false, pendingEmail: null })
    assert.match(body.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const expires = Date.parse(body.expiresAt)
    assert.ok(expires >= before + 86400_000 - 1000 && expires <= afterwards + 86400_000 + 1000, body.expiresAt)
    assert.equal(res.headers.location, '/v1/sessions/current')
  })

  test('any wrong password is 401, whatever its length (the password rules are not revealed)', async () => {
    const user = await createUser(app)
    for (const password of ['x', 'short', 'p'.repeat(51), 'p'.repeat(1000)]) {
      assertError(await logIn(app, { email: user.email, password }, { headers: {} }), 401, 'INVALID_CREDENTIALS')
    }
  })

  test('the token is at least 256 bits of base64url and differs on every log-in', async () => {
    const user = await createUser(app)
    const tokens = new Set<string>()
    for (let i = 0; i < 5; i++) {
      const token = (await logIn(app, { email: user.email, password: user.password })).json().token as string
      assert.match(token, TOKEN)
      assert.ok(Buffer.from(token, 'base64url').length >= 32)
      tokens.add(token)
    }
    tokens.add(user.token)
    assert.equal(tokens.size, 6)
  })

  test('the e-mail is matched case-insensitively; the password exactly', async () => {
    const user = await createUser(app, { email: uniqueEmail('Case'), password: 'Exact Password' })
    assert.equal((await logIn(app, { email: user.email.toUpperCase(), password: 'Exact Password' })).statusCode, 201)
    for (const password of ['exact password', 'Exact Password ', ' Exact Password', 'Exact  Password']) {
      assertError(await logIn(app, { email: user.email, password }), 401, 'INVALID_CREDENTIALS')
    }
  })

  test('an unknown e-mail and a wrong password are indistinguishable', async () => {
    const user = await createUser(app)
    const wrongPassword = await logIn(app, { email: user.email, password: 'not the password' })
    const unknownEmail = await logIn(app, { email: uniqueEmail('ghost'), password: user.password })
    for (const res of [wrongPassword, unknownEmail]) {
      assertError(res, 401, 'INVALID_CREDENTIALS')
      assert.equal(res.json().message, 'The e-mail address or password is incorrect.')
    }
    const strip = (body: Record<string, unknown>) => ({ ...body, requestId: undefined })
    assert.deepEqual(strip(unknownEmail.json()), strip(wrongPassword.json()))
    const names = (h: Record<string, unknown>) => Object.keys(h).filter((k) => k !== 'date').sort()
    assert.deepEqual(names(unknownEmail.headers), names(wrongPassword.headers))
    assert.equal(unknownEmail.headers['content-length'], wrongPassword.headers['content-length'])
    assert.equal(unknownEmail.headers.ratelimit, wrongPassword.headers.ratelimit)
    assert.equal(unknownEmail.headers['ratelimit-policy'], wrongPassword.headers['ratelimit-policy'])
  })

  test('an unknown e-mail is checked against a dummy hash of the same cost as real ones', async () => {
    // The structural half of "the same time": both paths run one Argon2id verification with the
    // same parameters (timing itself is not asserted).
    const user = await createUser(app)
    const row = await app.db.selectFrom('users').select('password_hash').where('id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    const params = (hash: string) => hash.split('$').slice(1, 4).join('$')
    assert.equal(params(row.password_hash), 'argon2id$v=19$m=19456,t=2,p=1', 'OWASP minimum for Argon2id')
    assert.equal(params(await prepareDummyHash()), params(row.password_hash))
    assert.equal(await verifyAgainstDummy(user.password), false)
    assert.equal(await verifyAgainstDummy('dummy password that never matches'), false, 'even the dummy\'s own password fails')
  })

  test('a deleted account is an unknown e-mail', async () => {
    const user = await createUser(app)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth })).statusCode, 204)
    assertError(await logIn(app, { email: user.email, password: user.password }), 401, 'INVALID_CREDENTIALS')
  })

  test('bad shapes are 400 VALIDATION_ERROR naming the fields', async () => {
    const email = uniqueEmail()
    const cases: Array<[unknown, string[]]> = [
      [{}, ['email', 'password']],
      [{ email }, ['password']],
      [{ password: 'x' }, ['email']],
      [{ email: 5, password: null }, ['email', 'password']],
      [{ email: [], password: {} }, ['email', 'password']],
      [{ email: true, password: false }, ['email', 'password']],
      [{ email: '', password: '' }, ['email', 'password']],
      [{ email, password: 'x', remember: true }, ['remember']],
      [{ email, password: 'x', token: 'x' }, ['token']],
      [{ email: 'e'.repeat(255), password: 'x' }, ['email']],
      [{ email: '   ', password: 'x' }, ['email']],
      [{ email, password: '        ' }, ['password']],
      [{ email: '\t\n', password: '\u00a0\u2003' }, ['email', 'password']],
      [{ email, password: 'p'.repeat(1001) }, ['password']]
    ]
    for (const [payload, fields] of cases) assertError(await logIn(app, payload), 400, 'VALIDATION_ERROR', fields)
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions' }), 400, 'VALIDATION_ERROR', ['email', 'password'])
    for (const json of ['null', '[]', '"a@example.com"']) {
      assertError(await logIn(app, json, { headers: { 'content-type': 'application/json' } }), 400, 'VALIDATION_ERROR', ['body'])
    }
    assertError(await logIn(app, '{"email":"a\\u0000@example.com","password":"\\ud800xxxxxxxx"}', { headers: { 'content-type': 'application/json' } }), 400, 'VALIDATION_ERROR', ['email', 'password'])
    assertError(await logIn(app, '{"email":', { headers: { 'content-type': 'application/json' } }), 400, 'MALFORMED_JSON')
    assertError(await logIn(app, 'email=a', { headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a bad shape is not counted as a failed log-in', async () => {
    const email = uniqueEmail()
    await logIn(app, { email, password: '' })
    await logIn(app, { email, password: 5 })
    const rows = await app.db.selectFrom('login_failures').select('id').where('email', '=', email).execute()
    assert.equal(rows.length, 0)
  })

  test('the password appears nowhere in the answer', async () => {
    const user = await createUser(app, { password: 'very distinctive pw' })
    const res = await logIn(app, { email: user.email, password: user.password })
    assert.ok(!res.body.includes('very distinctive pw'))
    assert.ok(!res.body.includes('$argon2'))
    const failed = await logIn(app, { email: user.email, password: 'another distinctive pw' })
    assert.ok(!failed.body.includes('another distinctive pw'))
  })

  test('log-in is not available under other methods', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/sessions' })
    assertError(res, 405, 'METHOD_NOT_ALLOWED')
  })
})
