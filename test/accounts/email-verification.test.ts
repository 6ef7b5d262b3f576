import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { SmtpCapture, linkIn, tokenIn } from '../support/smtp-capture.js'
import { assertError, buildAppForTest, buildTestApp, createAdmin, uniqueEmail } from '../helper.js'

// E-mail verification, end to end from the mail a real SMTP server captured: sign-up sends it,
// its token verifies the address once, a new one can be asked for (and voids the old one), and
// REQUIRE_EMAIL_VERIFICATION keeps unverified accounts from logging in.

const smtp = await SmtpCapture.start()
const MAIL_ENV = { SMTP_URL: smtp.url, MAIL_POLL_MS: '100', MAIL_PER_ADDRESS_PER_MINUTE: '1000000', MAIL_PER_ADDRESS_PER_HOUR: '1000000' }
const { app, close, config } = await buildTestApp(MAIL_ENV)
after(async () => { await close(); await smtp.stop() })

const SUBJECT = 'Verify your e-mail address'
const signUp = async (email = uniqueEmail('verify'), password = 'correct horse battery') => {
  const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { email, password, name: 'Vera' }, headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example' } })
  assert.equal(res.statusCode, 201, res.body)
  return { id: res.json().id as number, email, password }
}
const verify = async (token: unknown) => await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })
const askAgain = async (email: unknown) => await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload: { email } })
const session = async (email: string, password: string) => {
  const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().user as { emailVerified: boolean, pendingEmail: string | null, email: string }
}

describe('e-mail verification', { timeout: 120_000 }, () => {
  test('sign-up mails a verification link built from configuration; its token verifies the address once', async () => {
    const user = await signUp()
    assert.equal((await session(user.email, user.password)).emailVerified, false)
    const mail = await smtp.next(user.email, SUBJECT)
    // The mail as a mail: both parts, its own headers, from MAIL_FROM, the link from PUBLIC_URL
    // (never the Host the request named).
    assert.deepEqual(mail.to, [user.email.toLowerCase()])
    assert.match(mail.from, /no-reply@localhost/)
    assert.ok(mail.date instanceof Date && !Number.isNaN(mail.date.getTime()))
    assert.match(mail.messageId ?? '', /^<[^<>@\s]+@localhost>$/)
    const link = linkIn(mail)
    assert.equal(`${link.origin}${link.pathname}`, `${config.publicUrl}/account/email-verification`)
    assert.ok(!mail.raw.includes('evil.example'))
    assert.ok(mail.text.includes(link.href))
    assert.ok(mail.html.includes(link.href.replace(/&/g, '&amp;')))
    const token = tokenIn(mail)
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)

    const res = await verify(token)
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assert.equal((await session(user.email, user.password)).emailVerified, true)
    assertError(await verify(token), 400, 'INVALID_TOKEN')
  })

  test('the verification is a user.updated event of the user, with no token in the feed', async () => {
    const user = await signUp()
    const token = tokenIn(await smtp.next(user.email, SUBJECT))
    assert.equal((await verify(token)).statusCode, 204)
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
    const feed = await app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: { authorization: `Bearer ${login.json().token}` } })
    assert.equal(feed.statusCode, 200, feed.body)
    assert.ok(!feed.body.includes(token))
    const updated = (feed.json() as Array<{ type: string, data?: { emailVerified?: boolean } }>).filter((e) => e.type === 'user.updated')
    assert.deepEqual(updated.map((e) => e.data?.emailVerified), [true])
  })

  test('asking again: 202 without a body for any address; a new token voids the one before; a verified account gets none', async () => {
    const user = await signUp()
    const first = tokenIn(await smtp.next(user.email, SUBJECT))
    const again = await askAgain(user.email.toUpperCase())
    assert.equal(again.statusCode, 202)
    assert.equal(again.body, '')
    const second = tokenIn(await smtp.next(user.email, SUBJECT))
    assert.notEqual(second, first)
    assertError(await verify(first), 400, 'INVALID_TOKEN')
    assert.equal((await verify(second)).statusCode, 204)

    // Verified now: asking again answers the same and mails nothing. The proof that nothing
    // went is a marker mail queued after it, which arrives after it would have.
    const unknown = uniqueEmail('nobody')
    const before = smtp.mails.length
    for (const address of [user.email, unknown]) {
      const res = await askAgain(address)
      assert.equal(res.statusCode, 202)
      assert.equal(res.body, '')
    }
    const marker = await signUp()
    await smtp.next(marker.email, SUBJECT)
    const sent = smtp.mails.slice(before).flatMap((m) => m.to)
    assert.ok(!sent.includes(user.email.toLowerCase()), 'no mail for a verified address')
    assert.ok(!sent.includes(unknown.toLowerCase()), 'no mail for an address no account has')
  })

  test('INVALID_TOKEN for a made-up, an expired, a reset token and a deleted account\'s token', async () => {
    assertError(await verify('A'.repeat(43)), 400, 'INVALID_TOKEN')
    assertError(await verify('not even the shape of a token'), 400, 'INVALID_TOKEN')

    const expiring = await signUp()
    const expired = tokenIn(await smtp.next(expiring.email, SUBJECT))
    await write(app.db, async (trx) => { await trx.updateTable('account_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('purpose', '=', 'verify-email').where('email', '=', expiring.email).execute() })
    assertError(await verify(expired), 400, 'INVALID_TOKEN')

    const resetting = await signUp()
    await smtp.next(resetting.email, SUBJECT)
    assert.equal((await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email: resetting.email } })).statusCode, 202)
    const resetToken = tokenIn(await smtp.next(resetting.email, 'Reset your password'))
    assertError(await verify(resetToken), 400, 'INVALID_TOKEN')

    const leaving = await signUp()
    const orphan = tokenIn(await smtp.next(leaving.email, SUBJECT))
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: leaving.email, password: leaving.password } })
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${leaving.id}`, headers: { authorization: `Bearer ${login.json().token}` } })).statusCode, 204)
    assertError(await verify(orphan), 400, 'INVALID_TOKEN')
  })

  test('400 VALIDATION_ERROR on the fields for a missing, blank, wrong-typed, over-long or unknown member', async () => {
    for (const [payload, fields] of [
      [{}, ['token']],
      [{ token: '' }, ['token']],
      [{ token: '   ' }, ['token']],
      [{ token: 42 }, ['token']],
      [{ token: null }, ['token']],
      [{ token: ['a'] }, ['token']],
      [{ token: 'a'.repeat(257) }, ['token']],
      [{ token: 'A'.repeat(43), extra: true }, ['extra']]
    ] as Array<[object, string[]]>) {
      assertError(await app.inject({ method: 'POST', url: '/v1/email-verifications', payload }), 400, 'VALIDATION_ERROR', fields)
    }
    for (const [payload, fields] of [
      [{}, ['email']],
      [{ email: '' }, ['email']],
      [{ email: 'not an address' }, ['email']],
      [{ email: 7 }, ['email']],
      [{ email: `${'a'.repeat(250)}@example.com` }, ['email']],
      [{ email: 'a@example.com', name: 'x' }, ['name']]
    ] as Array<[object, string[]]>) {
      assertError(await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload }), 400, 'VALIDATION_ERROR', fields)
    }
  })

  test('REQUIRE_EMAIL_VERIFICATION: the right password to an unverified address is 403 EMAIL_NOT_VERIFIED, a wrong one 401; verified or admin logs in', async (t) => {
    const strict = await buildAppForTest(t, { ...MAIL_ENV, REQUIRE_EMAIL_VERIFICATION: 'true' })
    const email = uniqueEmail('strict')
    const password = 'correct horse battery'
    assert.equal((await strict.app.inject({ method: 'POST', url: '/v1/users', payload: { email, password, name: 'Strict' } })).statusCode, 201)
    const logIn = async (pw: string) => await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password: pw } })
    assertError(await logIn(password), 403, 'EMAIL_NOT_VERIFIED')
    assertError(await logIn('wrong password'), 401, 'INVALID_CREDENTIALS')
    const token = tokenIn(await smtp.next(email, SUBJECT))
    assert.equal((await strict.app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })).statusCode, 204)
    const res = await logIn(password)
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().user.emailVerified, true)
    const admin = await createAdmin(strict.app)
    const me = await strict.app.inject({ method: 'GET', url: '/v1/sessions/current', headers: admin.auth })
    assert.equal(me.json().user.emailVerified, true)
  })

  test('with APP_URL the link opens the application\'s own page', async (t) => {
    const own = await buildAppForTest(t, { ...MAIL_ENV, APP_URL: 'https://app.example/account/' })
    const email = uniqueEmail('app')
    assert.equal((await own.app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'correct horse battery', name: 'App' } })).statusCode, 201)
    const link = linkIn(await smtp.next(email, SUBJECT))
    assert.equal(`${link.origin}${link.pathname}`, 'https://app.example/account/email-verification')
    assert.match(link.searchParams.get('token') ?? '', /^[A-Za-z0-9_-]{43}$/)
  })
})
