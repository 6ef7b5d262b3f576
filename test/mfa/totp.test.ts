import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import * as OTPAuth from 'otpauth'
import { write } from '../../src/db/write.js'
import { assertError, buildTestApp, createAdmin, createUser, dialect, logIn, type TestUser } from '../helper.js'
import { decodeQrSvg } from '../support/qr-decode.js'
import { base32Decode, totp } from '../support/rfc6238.js'

// The second factor end to end: enrolment (the QR code read back to its URI), activation with a
// code computed here by an independent RFC 6238 implementation, log-in with a challenge, codes
// accepted once, recovery codes, removal, and every refusal with its exact status and code.
// A code is good in its 30-second step and one either side, so the tests use the codes of the
// current and the next step, whatever moment they run at; no test waits for a step to pass.

const SECRET_KEY = 'a1'.repeat(32)
const { app, close } = await buildTestApp({ SECRET_KEY })
after(close)

/** A factor, and the 30-second step whose code its activation spent. */
interface Factor { user: TestUser, secret: Buffer, recoveryCodes: string[], activatedStep: number }

/** The code its activation spent: refused from then on, whatever the time. */
function spentCode (factor: Factor): string {
  return totp(factor.secret, { time: factor.activatedStep * 30 })
}

/** The code of the step `offset` steps from now. */
function codeAt (secret: Buffer, offset = 0): string {
  return totp(secret, { time: Math.floor(Date.now() / 1000) + offset * 30 })
}

const enrol = async (user: TestUser, auth = user.auth) => await app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: auth })
const activate = async (user: TestUser, code: unknown, auth = user.auth) => await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/totp`, headers: auth, payload: { code } })
const remove = async (user: TestUser, body: unknown, auth = user.auth) => await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/totp`, headers: auth, payload: body as object })
const answer = async (challenge: unknown, code: unknown) => await app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge, code } })

/** A user with an active factor; the activation used the current step. */
async function withFactor (): Promise<Factor> {
  const user = await createUser(app)
  const enrolled = await enrol(user)
  assert.equal(enrolled.statusCode, 201, enrolled.body)
  const secret = base32Decode(enrolled.json().secret)
  const activatedStep = Math.floor(Date.now() / 1000 / 30)
  const activated = await activate(user, totp(secret, { time: activatedStep * 30 }))
  assert.equal(activated.statusCode, 200, activated.body)
  return { user, secret, recoveryCodes: activated.json().recoveryCodes, activatedStep }
}

async function challengeOf (user: TestUser): Promise<string> {
  const res = await logIn(app, { email: user.email, password: user.password })
  assertError(res, 401, 'MFA_REQUIRED')
  return res.json().challenge
}

async function mailsOf (userId: number): Promise<Array<{ kind: string, data: string }>> {
  return await app.db.selectFrom('mail_outbox').select(['kind', 'data']).where('user_id', '=', BigInt(userId)).where('kind', '=', 'mfa-changed').orderBy('id').execute()
}

describe('a second factor (TOTP)', { timeout: 120_000 }, () => {
  test('enrolment: a 160-bit secret, its otpauth:// URI and the same URI as a QR code; sealed at rest', async () => {
    const user = await createUser(app)
    const res = await enrol(user)
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers.location, `/v1/users/${user.id}/totp`)
    const { secret, otpauthUri, qrCodeSvg } = res.json()
    assert.equal(base32Decode(secret).length, 20)
    const uri = OTPAuth.URI.parse(otpauthUri) as OTPAuth.TOTP
    assert.ok(uri instanceof OTPAuth.TOTP)
    assert.equal(uri.label, user.email)
    assert.equal(uri.algorithm, 'SHA1')
    assert.equal(uri.digits, 6)
    assert.equal(uri.period, 30)
    assert.equal(uri.secret.base32, secret)
    assert.match(qrCodeSvg, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    assert.equal(decodeQrSvg(qrCodeSvg), otpauthUri)
    // Neither the secret nor its bytes are stored as they are.
    const row = await app.db.selectFrom('totp_factors').selectAll().where('user_id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    assert.equal(row.status, 'PENDING')
    assert.match(row.secret, /^v1\./)
    assert.ok(!row.secret.includes(secret) && !row.secret.includes(base32Decode(secret).toString('hex')))
    // Waiting for its first code, it asks nothing at log-in; a second enrolment replaces it.
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201)
    const again = await enrol(user)
    assert.equal(again.statusCode, 201)
    assert.notEqual(again.json().secret, secret)
    assertError(await activate(user, codeAt(base32Decode(secret))), 400, 'VALIDATION_ERROR', ['code'])
  })

  test('activation: a code of the app turns it on and answers ten recovery codes; then a log-in asks for a code', async () => {
    const { user, secret, recoveryCodes } = await withFactor()
    assert.equal(recoveryCodes.length, 10)
    assert.equal(new Set(recoveryCodes).size, 10)
    for (const code of recoveryCodes) assert.match(code, /^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/)
    const stored = await app.db.selectFrom('recovery_codes').select('code_hash').where('user_id', '=', BigInt(user.id)).execute()
    assert.equal(stored.length, 10)
    assert.ok(stored.every((row) => !recoveryCodes.some((code) => row.code_hash.includes(code.replace(/-/g, '')))))
    // Sessions made before stay.
    assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })).statusCode, 200)
    const res = await logIn(app, { email: user.email, password: user.password })
    assertError(res, 401, 'MFA_REQUIRED')
    assert.match(res.json().challenge, /^[\w-]{43}$/)
    const lifetime = Date.parse(res.json().expiresAt) - Date.now()
    assert.ok(lifetime > 4.5 * 60_000 && lifetime <= 5 * 60_000, String(lifetime))
    // The activation used this step's code: the next step's is good, once.
    const session = await answer(res.json().challenge, codeAt(secret, 1))
    assert.equal(session.statusCode, 201, session.body)
    assert.equal(session.json().user.id, user.id)
    const me = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${session.json().token}` } })
    assert.equal(me.statusCode, 200)
    // Enrolling or activating again: 409.
    assertError(await enrol(user), 409, 'MFA_ALREADY_ENABLED')
    assertError(await activate(user, codeAt(secret)), 409, 'MFA_ALREADY_ENABLED')
  })

  test('a code is accepted once, and only in its step or one either side', async () => {
    const factor = await withFactor()
    const { user, secret } = factor
    // The activation's code is spent; the one of the step before now is not newer than it.
    assertError(await answer(await challengeOf(user), spentCode(factor)), 401, 'INVALID_MFA_CODE')
    assertError(await answer(await challengeOf(user), codeAt(secret, -1)), 401, 'INVALID_MFA_CODE')
    // Too far ahead, or behind.
    assertError(await answer(await challengeOf(user), codeAt(secret, 3)), 401, 'INVALID_MFA_CODE')
    assertError(await answer(await challengeOf(user), codeAt(secret, -3)), 401, 'INVALID_MFA_CODE')
    const challenge = await challengeOf(user)
    // Kept, not computed again: past a step boundary a new computation would be a fresh code.
    const code = codeAt(secret, 1)
    assert.equal((await answer(challenge, code)).statusCode, 201)
    // The same code again, with a new challenge: refused.
    assertError(await answer(await challengeOf(user), code), 401, 'INVALID_MFA_CODE')
    // The same challenge again: refused.
    assertError(await answer(challenge, codeAt(secret, 1)), 401, 'INVALID_MFA_CODE')
  })

  test('a challenge: single use, five minutes, voided by five wrong codes, its own account only', async () => {
    const alice = await withFactor()
    const bob = await withFactor()
    // Bob's code against Alice's challenge.
    assertError(await answer(await challengeOf(alice.user), codeAt(bob.secret, 1)), 401, 'INVALID_MFA_CODE')
    // Expired.
    const late = await challengeOf(alice.user)
    await write(app.db, async (trx) => { await trx.updateTable('mfa_challenges').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('user_id', '=', BigInt(alice.user.id)).execute() })
    assertError(await answer(late, alice.recoveryCodes[0]), 401, 'INVALID_MFA_CODE')
    // Five wrong codes void it: a right code afterwards is refused too.
    const guessed = await challengeOf(alice.user)
    for (let i = 0; i < 5; i++) assertError(await answer(guessed, String((i * 111_111) % 1_000_000).padStart(6, '0')), 401, 'INVALID_MFA_CODE')
    assertError(await answer(guessed, alice.recoveryCodes[0]), 401, 'INVALID_MFA_CODE')
    // Unknown and forged challenges, the same answer.
    assertError(await answer('not a challenge', codeAt(alice.secret, 1)), 401, 'INVALID_MFA_CODE')
    // The recovery code is still unused: it works with a fresh challenge.
    assert.equal((await answer(await challengeOf(alice.user), alice.recoveryCodes[0])).statusCode, 201)
  })

  test('recovery codes: each once, written any way; their use is mailed', async () => {
    const { user, recoveryCodes } = await withFactor()
    const [first, second] = recoveryCodes as [string, string]
    assert.equal((await answer(await challengeOf(user), first)).statusCode, 201)
    assertError(await answer(await challengeOf(user), first), 401, 'INVALID_MFA_CODE')
    assert.equal((await answer(await challengeOf(user), ` ${second.toUpperCase().replace(/-/g, ' ')} `)).statusCode, 201)
    const notices = (await mailsOf(user.id)).filter((mail) => JSON.parse(mail.data).what !== 'enabled')
    assert.deepEqual(notices.map((mail) => JSON.parse(mail.data).what), ['recovery-code-used', 'recovery-code-used'])
    assert.deepEqual(notices.map((mail) => JSON.parse(mail.data).remaining), ['9', '8'])
  })

  test('two answers to one challenge at once: one session', async () => {
    const { user, recoveryCodes, secret } = await withFactor()
    const challenge = await challengeOf(user)
    const answers = await Promise.all([answer(challenge, codeAt(secret, 1)), answer(challenge, recoveryCodes[0]), answer(challenge, codeAt(secret, 1))])
    assert.deepEqual(answers.map((res) => res.statusCode).sort(), [201, 401, 401])
    for (const res of answers.filter((r) => r.statusCode !== 201)) assertError(res, 401, 'INVALID_MFA_CODE')
  })

  test('removal needs the password and a code; the sessions stay, a notice is mailed, log-in asks nothing more', async () => {
    const factor = await withFactor()
    const { user, secret, recoveryCodes } = factor
    assertError(await remove(user, { password: 'wrong password', code: codeAt(secret, 1) }), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await remove(user, { password: user.password, code: '000000' }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await remove(user, { password: 'wrong password', code: 'nope' }), 400, 'VALIDATION_ERROR', ['code', 'password'])
    // A used code does not remove it either.
    assertError(await remove(user, { password: user.password, code: spentCode(factor) }), 400, 'VALIDATION_ERROR', ['code'])
    // A recovery code does.
    const removed = await remove(user, { password: user.password, code: recoveryCodes[3] })
    assert.equal(removed.statusCode, 204, removed.body)
    assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })).statusCode, 200)
    // Turned on, then off: a notice each.
    assert.deepEqual((await mailsOf(user.id)).map((mail) => JSON.parse(mail.data).what), ['enabled', 'disabled'])
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201)
    assertError(await remove(user, { password: user.password, code: codeAt(secret, 1) }), 404, 'TOTP_NOT_FOUND')
    const rows = await app.db.selectFrom('recovery_codes').select('id').where('user_id', '=', BigInt(user.id)).execute()
    assert.deepEqual(rows, [])
  })

  test('bad input, other people and keys: each with its status and code', async () => {
    const { user, secret } = await withFactor()
    const stranger = await createUser(app)
    assertError(await activate(stranger, '123456'), 404, 'TOTP_NOT_FOUND')
    assertError(await remove(stranger, { password: stranger.password, code: '123456' }), 404, 'TOTP_NOT_FOUND')
    assertError(await enrol(user, stranger.auth), 403, 'ACCESS_DENIED')
    assertError(await activate(user, codeAt(secret, 1), stranger.auth), 403, 'ACCESS_DENIED')
    assertError(await remove(user, { password: user.password, code: codeAt(secret, 1) }, stranger.auth), 403, 'ACCESS_DENIED')
    assertError(await app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'POST', url: '/v1/users/9007199254740991/totp', headers: user.auth }), 404, 'USER_NOT_FOUND')
    const key = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'bot', scopes: ['posts:write'] } })
    const keyAuth = { authorization: `Bearer ${key.json().key as string}` }
    assertError(await enrol(user, keyAuth), 403, 'INSUFFICIENT_SCOPE')
    assertError(await activate(user, '123456', keyAuth), 403, 'INSUFFICIENT_SCOPE')
    assertError(await remove(user, { password: user.password, code: '123456' }, keyAuth), 403, 'INSUFFICIENT_SCOPE')
    // Bodies.
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${stranger.id}/totp`, headers: stranger.auth, payload: {} }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await activate(stranger, 123456), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await activate(stranger, ' '), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await activate(stranger, '1'.repeat(33)), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${stranger.id}/totp`, headers: stranger.auth, payload: { code: '123456', secret: 'x' } }), 400, 'VALIDATION_ERROR', ['secret'])
    assertError(await remove(user, {}), 400, 'VALIDATION_ERROR', ['code', 'password'])
    assertError(await answer(await challengeOf(user), '1'.repeat(33)), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge: 'x' } }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await answer(42, []), 400, 'VALIDATION_ERROR', ['challenge', 'code'])
    // A malformed code at log-in is a wrong code like any other.
    assertError(await answer(await challengeOf(user), 'abc'), 401, 'INVALID_MFA_CODE')
  })
})

describe('the second factor and the log-in limits', { timeout: 60_000 }, () => {
  test('wrong codes count as failed log-ins: past the limit, 429 whatever the code', async () => {
    const strict = await buildTestApp({ SECRET_KEY, LOGIN_FAILURES_PER_EMAIL: '3' })
    try {
      const user = await createUser(strict.app)
      const enrolled = await strict.app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: user.auth })
      const secret = base32Decode(enrolled.json().secret)
      assert.equal((await strict.app.inject({ method: 'PUT', url: `/v1/users/${user.id}/totp`, headers: user.auth, payload: { code: codeAt(secret) } })).statusCode, 200)
      const login = await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
      const challenge = login.json().challenge
      for (let i = 0; i < 3; i++) {
        const res = await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge, code: '000000' } })
        assertError(res, 401, 'INVALID_MFA_CODE')
      }
      const limited = await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge, code: codeAt(secret, 1) } })
      assertError(limited, 429, 'TOO_MANY_REQUESTS')
      assert.match(String(limited.headers['retry-after']), /^\d+$/)
    } finally {
      await strict.close()
    }
  })
})

describe('without a key for secrets at rest', { timeout: 60_000 }, () => {
  test(dialect === 'postgres' ? 'on PostgreSQL without SECRET_KEY, enrolment is 503 (every instance must share one key)' : 'on SQLite without SECRET_KEY, a key file is made beside the database (0600)', async () => {
    const bare = await buildTestApp({})
    try {
      const user = await createUser(bare.app)
      const res = await bare.app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: user.auth })
      if (dialect === 'postgres') {
        assertError(res, 503, 'SERVICE_UNAVAILABLE')
      } else {
        assert.equal(res.statusCode, 201, res.body)
        const { statSync } = await import('node:fs')
        const { dirname, join } = await import('node:path')
        const file = join(dirname(bare.config.databaseUrl.slice('file:'.length)), 'secret.key')
        assert.equal(statSync(file).mode & 0o777, 0o600)
      }
    } finally {
      await bare.close()
    }
  })
})

describe('an administrator removes another user\'s second factor (the lost phone)', { timeout: 120_000 }, () => {
  const events = async (userId: number) => await app.db.selectFrom('events').select(['type', 'data']).where('resource_id', '=', BigInt(userId)).orderBy('id').execute()

  test('204 without password or code, with no body or an empty one: the factor, its recovery codes and open challenges go; a notice is mailed; user.updated recorded; the sessions stay', async () => {
    const admin = await createAdmin(app)
    for (const body of [undefined, {}]) {
      const { user, recoveryCodes } = await withFactor()
      const challenge = await challengeOf(user)
      const res = await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/totp`, headers: admin.auth, ...(body === undefined ? {} : { payload: body }) })
      assert.equal(res.statusCode, 204, res.body)
      assert.equal(res.body, '')
      const logged = await logIn(app, { email: user.email, password: user.password })
      assert.equal(logged.statusCode, 201, 'a log-in needs only the password again')
      assertError(await answer(challenge, recoveryCodes[0]), 401, 'INVALID_MFA_CODE')
      assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })).statusCode, 200, 'the user\'s sessions stay')
      assert.deepEqual((await mailsOf(user.id)).map((m) => JSON.parse(m.data).what), ['enabled', 'removed'])
      const recorded = await events(user.id)
      assert.equal(recorded.at(-1)!.type, 'user.updated')
      assert.equal(JSON.parse(String(recorded.at(-1)!.data)).id, user.id)
      assert.equal((await app.db.selectFrom('recovery_codes').select('id').where('user_id', '=', BigInt(user.id)).execute()).length, 0)
      // Again: nothing left to remove.
      assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/totp`, headers: admin.auth }), 404, 'TOTP_NOT_FOUND')
    }
  })

  test('what the administrator\'s body holds is not read; a user who is not an administrator is refused; the administrator\'s own factor still needs its password and code', async () => {
    const admin = await createAdmin(app)
    const { user, secret } = await withFactor()
    assertError(await remove(user, {}, (await createUser(app)).auth), 403, 'ACCESS_DENIED')
    assert.equal((await remove(user, { password: 'not the password', code: '000000' }, admin.auth)).statusCode, 204)
    assertError(await activate(user, codeAt(secret, 1)), 404, 'TOTP_NOT_FOUND')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${admin.id}/totp`, headers: admin.auth, payload: {} }), 400, 'VALIDATION_ERROR', ['code', 'password'])
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${admin.id}/totp`, headers: admin.auth, payload: { password: admin.password, code: '123456' } }), 404, 'TOTP_NOT_FOUND')
    assertError(await app.inject({ method: 'DELETE', url: '/v1/users/9007199254740991/totp', headers: admin.auth }), 404, 'USER_NOT_FOUND')
    assertError(await app.inject({ method: 'DELETE', url: '/v1/users/abc/totp', headers: admin.auth }), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/totp`, headers: admin.auth, payload: { password: 5, extra: true } }), 400, 'VALIDATION_ERROR', ['extra', 'password'])
    const key = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin.auth, payload: { name: 'console', scopes: ['products:write'] } })
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/totp`, headers: { authorization: `Bearer ${key.json().key as string}` } }), 403, 'INSUFFICIENT_SCOPE')
  })
})
