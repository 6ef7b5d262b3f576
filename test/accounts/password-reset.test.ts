import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { AddressObject } from 'mailparser'
import { write } from '../../src/db/write.js'
import { assertError, buildTestApp, createUser, logIn, tokenOf, uniqueEmail } from '../helper.js'
import { waitFor } from '../system/load.js'
import { SmtpCapture, linkIn, tokenIn } from '../support/smtp-capture.js'

// Forgotten passwords, end to end through a real SMTP server: the reset mail and its link, the
// token spent once, what a reset does to the account (sessions, API keys, the address's proof),
// the tokens it refuses, and the per-client limit on failed tokens.

const TIMEOUT = { timeout: 60_000 }
const MAIL_ENV = { MAIL_POLL_MS: '100', MAIL_PER_ADDRESS_PER_MINUTE: '1000000', MAIL_PER_ADDRESS_PER_HOUR: '1000000' }
const RESET_SUBJECT = 'Reset your password'
const CHANGED_SUBJECT = 'Your password was changed'
const NEW_PASSWORD = 'a brand new password'

const smtp = await SmtpCapture.start()
// The failed-token limit is lifted here: this file spends many bad tokens from one client on
// purpose; the limit has its own app below.
const { app, config, close } = await buildTestApp({ SMTP_URL: smtp.url, ...MAIL_ENV, TOKEN_FAILURES_PER_CLIENT_PER_MINUTE: '1000000' })
after(async () => { await close(); await smtp.stop() })

const madeUpToken = (): string => randomBytes(32).toString('base64url')

const requestReset = (target: FastifyInstance, email: unknown, headers: Record<string, string> = {}) =>
  target.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email } as object, headers })
const reset = (target: FastifyInstance, payload: unknown, remoteAddress?: string) =>
  target.inject({ method: 'POST', url: '/v1/password-resets', payload: payload as object, ...(remoteAddress === undefined ? {} : { remoteAddress }) })
const verify = (target: FastifyInstance, payload: unknown, remoteAddress?: string) =>
  target.inject({ method: 'POST', url: '/v1/email-verifications', payload: payload as object, ...(remoteAddress === undefined ? {} : { remoteAddress }) })
const current = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers })

/** Asks for a reset mail and returns the token from its link. */
async function resetToken (user: { email: string }, target: FastifyInstance = app): Promise<string> {
  const res = await requestReset(target, user.email)
  assert.equal(res.statusCode, 202, res.body)
  return tokenIn(await smtp.next(user.email, RESET_SUBJECT))
}

describe('password reset through the mail', TIMEOUT, () => {
  test('end to end: the mail, its link from configuration only, the reset, the notice, the token spent', TIMEOUT, async () => {
    const user = await createUser(app)
    const requested = await requestReset(app, user.email, { host: 'evil.example', 'x-forwarded-host': 'evil.example' })
    assert.equal(requested.statusCode, 202, requested.body)
    assert.equal(requested.body, '')
    assert.equal(requested.headers['cache-control'], 'no-store')

    const mail = await smtp.next(user.email, RESET_SUBJECT)
    assert.deepEqual(mail.to, [user.email.toLowerCase()])
    assert.equal((mail.headers.get('to') as AddressObject).value[0]?.address, user.email)
    assert.equal(mail.envelopeFrom, config.mail.from)
    assert.ok(mail.from.includes(config.mail.from), mail.from)
    assert.equal(mail.headers.get('subject'), RESET_SUBJECT)
    assert.ok(mail.headers.has('date') && mail.date instanceof Date, 'a Date header')
    assert.ok(Math.abs(mail.date.getTime() - Date.now()) < 60_000, 'dated now')
    assert.ok(mail.headers.has('message-id'), 'a Message-ID header')
    const queued = await app.db.selectFrom('mail_outbox').select(['message_id', 'status', 'user_id'])
      .where('kind', '=', 'reset-password').where('address', '=', user.email).executeTakeFirstOrThrow()
    assert.equal(mail.messageId, queued.message_id)
    assert.equal(queued.user_id, null, 'the request names no account')

    const token = tokenIn(mail)
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    const prefix = `${config.publicUrl}/account/password-reset?token=`
    const link = `${prefix}${token}`
    assert.ok(linkIn(mail).href.startsWith(prefix), linkIn(mail).href)
    assert.ok(mail.text.split(/\r?\n/).some((line) => line.trim() === link), 'the text part has the link on a line of its own')
    assert.ok(mail.html.includes(`href="${link}"`), 'the HTML part links to it')
    assert.ok(!mail.raw.includes('evil.example'), 'nothing of the request\'s Host is in the mail')

    const done = await reset(app, { token, newPassword: NEW_PASSWORD })
    assert.equal(done.statusCode, 204, done.body)
    assert.equal(done.body, '')
    assertError(await current(user.auth), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await logIn(app, { email: user.email, password: user.password }), 401, 'INVALID_CREDENTIALS')
    assert.equal((await logIn(app, { email: user.email, password: NEW_PASSWORD })).statusCode, 201)

    const notice = await smtp.next(user.email, CHANGED_SUBJECT)
    assert.deepEqual(notice.to, [user.email.toLowerCase()])
    assert.match(notice.text, /reset with a link sent to this address/)
    assert.ok(!notice.raw.includes(token), 'the notice carries no token')

    assertError(await reset(app, { token, newPassword: 'yet another password' }), 400, 'INVALID_TOKEN')
    assertError(await logIn(app, { email: user.email, password: 'yet another password' }), 401, 'INVALID_CREDENTIALS')
  })

  test('an address no account has: the same 202, and no mail goes to it', TIMEOUT, async () => {
    const nobody = uniqueEmail('nobody')
    const res = await requestReset(app, nobody)
    assert.equal(res.statusCode, 202, res.body)
    assert.equal(res.body, '')
    assert.equal(res.headers['cache-control'], 'no-store')
    // A mail queued after it, to an account's address, has gone out; and the one to nobody was
    // decided (skipped), not merely not yet sent.
    const marker = await createUser(app)
    assert.equal((await requestReset(app, marker.email)).statusCode, 202)
    await smtp.next(marker.email, RESET_SUBJECT)
    const status = async () => (await app.db.selectFrom('mail_outbox').select('status').where('address', '=', nobody).executeTakeFirstOrThrow()).status
    await waitFor('the mail to the unknown address is decided', async () => await status() !== 'PENDING', 15_000)
    assert.equal(await status(), 'SKIPPED')
    assert.deepEqual(smtp.mails.filter((m) => m.to.includes(nobody.toLowerCase()) || m.raw.includes(nobody)), [])
    const tokens = await app.db.selectFrom('account_tokens').select('id').where('email', '=', nobody).execute()
    assert.deepEqual(tokens, [])
  })
})

describe('tokens refused with INVALID_TOKEN', TIMEOUT, () => {
  test('a second request voids the first token', TIMEOUT, async () => {
    const user = await createUser(app)
    const first = await resetToken(user)
    const second = await resetToken(user)
    assert.notEqual(first, second)
    assertError(await reset(app, { token: first, newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
    assert.equal((await reset(app, { token: second, newPassword: NEW_PASSWORD })).statusCode, 204)
    assert.equal((await logIn(app, { email: user.email, password: NEW_PASSWORD })).statusCode, 201)
  })

  test('a token of the other kind is refused at each endpoint, and stays good for its own', TIMEOUT, async () => {
    const user = await createUser(app)
    const verification = tokenIn(await smtp.next(user.email, 'Verify your e-mail address'))
    const resetting = await resetToken(user)
    assertError(await reset(app, { token: verification, newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
    assertError(await verify(app, { token: resetting }), 400, 'INVALID_TOKEN')
    // Neither was spent by the wrong endpoint.
    assert.equal((await verify(app, { token: verification })).statusCode, 204)
    assert.equal((await reset(app, { token: resetting, newPassword: NEW_PASSWORD })).statusCode, 204)
  })

  test('an expired token', TIMEOUT, async () => {
    const user = await createUser(app)
    const token = await resetToken(user)
    // On SQLite the service's handle writes only through a unit of work.
    const { numUpdatedRows } = await write(app.db, async (trx) => await trx.updateTable('account_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('user_id', '=', BigInt(user.id)).where('purpose', '=', 'reset-password').executeTakeFirst())
    assert.equal(Number(numUpdatedRows), 1)
    assertError(await reset(app, { token, newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201, 'the password stays')
  })

  test('a token of an account deleted since', TIMEOUT, async () => {
    const user = await createUser(app)
    const token = await resetToken(user)
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth })
    assert.equal(deleted.statusCode, 204, deleted.body)
    assertError(await reset(app, { token, newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
  })

  test('a made-up token of the right shape', TIMEOUT, async () => {
    const token = madeUpToken()
    assert.equal(token.length, 43)
    assertError(await reset(app, { token, newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
    assertError(await verify(app, { token }), 400, 'INVALID_TOKEN')
    // The longest token the schema takes is still only a token that does not exist.
    assertError(await reset(app, { token: 'a'.repeat(256), newPassword: NEW_PASSWORD }), 400, 'INVALID_TOKEN')
  })
})

describe('bad input', TIMEOUT, () => {
  const good = { token: madeUpToken(), newPassword: NEW_PASSWORD }
  const badTokens: Array<[string, Record<string, unknown>]> = [
    ['missing', {}],
    ['empty', { token: '' }],
    ['blank', { token: '   ' }],
    ['a number', { token: 12345 }],
    ['null', { token: null }],
    ['too long (257)', { token: 'a'.repeat(257) }]
  ]

  test('POST /v1/password-resets: token', TIMEOUT, async () => {
    for (const [what, member] of badTokens) {
      const res = await reset(app, { newPassword: good.newPassword, ...member })
      assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
      assertError(res, 400, 'VALIDATION_ERROR', ['token'])
    }
  })

  test('POST /v1/password-resets: newPassword', TIMEOUT, async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['too short (7)', { newPassword: 'p'.repeat(7) }],
      ['too long (51)', { newPassword: 'p'.repeat(51) }],
      ['missing', {}],
      ['a number', { newPassword: 12345678 }],
      ['blank', { newPassword: ' '.repeat(10) }]
    ]
    for (const [what, member] of cases) {
      const res = await reset(app, { token: good.token, ...member })
      assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
      assertError(res, 400, 'VALIDATION_ERROR', ['newPassword'])
    }
  })

  test('POST /v1/password-resets: both members bad, an unknown member', TIMEOUT, async () => {
    assertError(await reset(app, {}), 400, 'VALIDATION_ERROR', ['token', 'newPassword'])
    assertError(await reset(app, { token: 7, newPassword: 'short' }), 400, 'VALIDATION_ERROR', ['token', 'newPassword'])
    assertError(await reset(app, { ...good, extra: 1 }), 400, 'VALIDATION_ERROR', ['extra'])
  })

  test('POST /v1/email-verifications: token, an unknown member', TIMEOUT, async () => {
    for (const [what, member] of badTokens) {
      const res = await verify(app, member)
      assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
      assertError(res, 400, 'VALIDATION_ERROR', ['token'])
    }
    assertError(await verify(app, { token: good.token, extra: 1 }), 400, 'VALIDATION_ERROR', ['extra'])
  })

  test('POST /v1/password-reset-tokens: email', TIMEOUT, async () => {
    const tooLong = `${'a'.repeat(243)}@example.com`
    assert.equal(tooLong.length, 255)
    const cases: Array<[string, Record<string, unknown>]> = [
      ['missing', {}],
      ['malformed', { email: 'not an address' }],
      ['no domain', { email: 'someone@' }],
      ['a number', { email: 42 }],
      ['an array', { email: ['a@example.com'] }],
      ['blank', { email: '   ' }],
      ['255 characters', { email: tooLong }]
    ]
    for (const [what, payload] of cases) {
      const res = await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload })
      assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
      assertError(res, 400, 'VALIDATION_ERROR', ['email'])
    }
    const extra = await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email: uniqueEmail(), extra: 1 } })
    assertError(extra, 400, 'VALIDATION_ERROR', ['extra'])
    const queued = await app.db.selectFrom('mail_outbox').select('id').where('address', '=', tooLong).execute()
    assert.deepEqual(queued, [], 'nothing queued for a refused request')
  })

  test('a good token with a too-short password is 400 on newPassword and is not spent', TIMEOUT, async () => {
    const user = await createUser(app)
    const token = await resetToken(user)
    assertError(await reset(app, { token, newPassword: 'short12' }), 400, 'VALIDATION_ERROR', ['newPassword'])
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201, 'the password stays')
    assert.equal((await reset(app, { token, newPassword: NEW_PASSWORD })).statusCode, 204)
    assert.equal((await logIn(app, { email: user.email, password: NEW_PASSWORD })).statusCode, 201)
  })
})

describe('what a reset does to the account', TIMEOUT, () => {
  test('six resets with one token at once: exactly one succeeds', TIMEOUT, async () => {
    const user = await createUser(app)
    const token = await resetToken(user)
    const passwords = Array.from({ length: 6 }, (_, i) => `concurrent password ${i}`)
    const answers = await Promise.all(passwords.map((newPassword) => reset(app, { token, newPassword })))
    const won = answers.flatMap((res, i) => res.statusCode === 204 ? [i] : [])
    assert.equal(won.length, 1, answers.map((res) => `${res.statusCode} ${res.body}`).join('\n'))
    for (const res of answers) if (res.statusCode !== 204) assertError(res, 400, 'INVALID_TOKEN')
    // The winner's password is the one in force, and no other.
    for (const [i, password] of passwords.entries()) {
      assert.equal((await logIn(app, { email: user.email, password: password })).statusCode, i === won[0] ? 201 : 401, password)
    }
    await smtp.next(user.email, CHANGED_SUBJECT)
  })

  test('a proven address: every session of the account ends; its API keys keep working', TIMEOUT, async () => {
    const user = await createUser(app)
    // The owner proved the address before (a reset of an address never proven ends the keys too).
    await write(app.db, async (trx) => { await trx.updateTable('users').set({ email_verified: 1 }).where('id', '=', BigInt(user.id)).execute() })
    const second = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    const created = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'k', scopes: ['posts:write'] } })
    assert.equal(created.statusCode, 201, created.body)
    const keyAuth = { authorization: `Bearer ${created.json().key as string}` }
    const post = (title: string) => app.inject({ method: 'POST', url: '/v1/posts', headers: keyAuth, payload: { title, content: 'Written with a key.' } })
    assert.equal((await post('before the reset')).statusCode, 201)

    const token = await resetToken(user)
    assert.equal((await reset(app, { token, newPassword: NEW_PASSWORD })).statusCode, 204)
    assertError(await current(user.auth), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await current(second), 401, 'AUTHENTICATION_REQUIRED')
    const sessions = await app.db.selectFrom('sessions').select('id').where('user_id', '=', BigInt(user.id)).execute()
    assert.deepEqual(sessions, [])

    const written = await post('after the reset')
    assert.equal(written.statusCode, 201, written.body)
    assert.equal(written.json().author.id, user.id)
  })

  test('a reset proves an unverified address', TIMEOUT, async () => {
    const user = await createUser(app)
    const before = await logIn(app, { email: user.email, password: user.password })
    assert.equal(before.json().user.emailVerified, false)
    const token = await resetToken(user)
    assert.equal((await reset(app, { token, newPassword: NEW_PASSWORD })).statusCode, 204)
    const afterwards = await logIn(app, { email: user.email, password: NEW_PASSWORD })
    assert.equal(afterwards.statusCode, 201)
    assert.equal(afterwards.json().user.emailVerified, true)
    assert.equal(afterwards.json().user.pendingEmail, null)
  })

  test('a password change while logged in voids an outstanding reset token and sends the notice', TIMEOUT, async () => {
    const user = await createUser(app)
    const token = await resetToken(user)
    const changed = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: user.auth, payload: { currentPassword: user.password, newPassword: NEW_PASSWORD } })
    assert.equal(changed.statusCode, 204, changed.body)
    const notice = await smtp.next(user.email, CHANGED_SUBJECT)
    assert.match(notice.text, /was changed\./)
    assert.doesNotMatch(notice.text, /reset with a link/)
    assertError(await reset(app, { token, newPassword: 'yet another password' }), 400, 'INVALID_TOKEN')
    assert.equal((await logIn(app, { email: user.email, password: NEW_PASSWORD })).statusCode, 201)
  })
})

describe('the limit on failed tokens per client', TIMEOUT, () => {
  // One app with a limit of 3 for both tests; each counts as a client address of its own.
  let limited: FastifyInstance
  let closeLimited: () => Promise<void> = async () => {}
  before(async () => {
    const built = await buildTestApp({ SMTP_URL: smtp.url, ...MAIL_ENV, TOKEN_FAILURES_PER_CLIENT_PER_MINUTE: '3' })
    limited = built.app
    closeLimited = built.close
  })
  after(async () => { await closeLimited() })

  test('past the limit every token from that client is 429, good ones and on both endpoints', TIMEOUT, async () => {
    const user = await createUser(limited)
    const token = await resetToken(user, limited)
    const client = '10.20.30.40'
    for (let i = 0; i < 3; i++) assertError(await reset(limited, { token: madeUpToken(), newPassword: NEW_PASSWORD }, client), 400, 'INVALID_TOKEN')
    const refused = await reset(limited, { token: madeUpToken(), newPassword: NEW_PASSWORD }, client)
    assertError(refused, 429, 'TOO_MANY_REQUESTS')
    const retryAfter = String(refused.headers['retry-after'])
    assert.match(retryAfter, /^\d+$/)
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter)
    // The limit is checked before the token is looked at.
    assertError(await reset(limited, { token, newPassword: NEW_PASSWORD }, client), 429, 'TOO_MANY_REQUESTS')
    assertError(await verify(limited, { token: madeUpToken() }, client), 429, 'TOO_MANY_REQUESTS')
    // The refused good token was not spent: another client uses it.
    assert.equal((await reset(limited, { token, newPassword: NEW_PASSWORD }, '10.20.30.41')).statusCode, 204)
  })

  test('failures on either endpoint count together; a good token is not a failure', TIMEOUT, async () => {
    const user = await createUser(limited)
    const token = await resetToken(user, limited)
    const client = '10.20.30.50'
    assertError(await verify(limited, { token: madeUpToken() }, client), 400, 'INVALID_TOKEN')
    assertError(await reset(limited, { token: madeUpToken(), newPassword: NEW_PASSWORD }, client), 400, 'INVALID_TOKEN')
    assert.equal((await reset(limited, { token, newPassword: NEW_PASSWORD }, client)).statusCode, 204)
    assertError(await verify(limited, { token: madeUpToken() }, client), 400, 'INVALID_TOKEN')
    assertError(await reset(limited, { token: madeUpToken(), newPassword: NEW_PASSWORD }, client), 429, 'TOO_MANY_REQUESTS')
    // Another client has its own count.
    assertError(await verify(limited, { token: madeUpToken() }, '10.20.30.51'), 400, 'INVALID_TOKEN')
  })
})
