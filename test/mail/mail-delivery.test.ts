import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import { simpleParser } from 'mailparser'
import { buildAppForTest, uniqueEmail, waitFor } from '../helper.js'
import { SmtpCapture, tokenIn } from '../support/smtp-capture.js'
import type { FastifyInstance } from 'fastify'

// The mail channel itself: .eml files without SMTP_URL; over SMTP, retries while the server is
// down, a give-up point, nothing waiting on a slow server, and the metrics of each outcome.

const RETRY_FAST = { MAIL_POLL_MS: '50', MAIL_RETRY_SCHEDULE: '0,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1' }

async function metric (app: FastifyInstance, name: string, kind: string): Promise<number> {
  const text = await app.metricsRegistry.metrics()
  const line = text.split('\n').find((l) => l.startsWith(`${name}{kind="${kind}"}`))
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

/** An SMTP server that is down (connections refused) until the test restarts it on its port. */
async function downSmtp (t: TestContext): Promise<SmtpCapture> {
  const smtp = await SmtpCapture.start()
  t.after(async () => { await smtp.stop() })
  await smtp.stop()
  return smtp
}

const signUp = async (app: FastifyInstance, email = uniqueEmail('mail')) => {
  const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'correct horse battery', name: 'Mel' } })
  assert.equal(res.statusCode, 201, res.body)
  return { id: res.json().id as number, email }
}
const outbox = async (app: FastifyInstance, address: string) =>
  await app.db.selectFrom('mail_outbox').selectAll().where('address', '=', address).execute()

describe('the mail channel', { timeout: 120_000 }, () => {
  test('without SMTP_URL each mail is an RFC 5322 .eml file in MAIL_DIR, private to its owner', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'api-mail-'))
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const { app } = await buildAppForTest(t, { MAIL_DIR: join(dir, 'mail'), MAIL_POLL_MS: '50' })
    const user = await signUp(app)
    await waitFor('the .eml file is written', async () => { try { return readdirSync(join(dir, 'mail')).some((f) => f.endsWith('.eml')) } catch { return false } }, 15_000)
    const [file] = readdirSync(join(dir, 'mail')).filter((f) => f.endsWith('.eml'))
    const path = join(dir, 'mail', file!)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.equal(statSync(join(dir, 'mail')).mode & 0o777, 0o700)
    const parsed = await simpleParser(readFileSync(path))
    assert.equal(parsed.subject, 'Verify your e-mail address')
    assert.equal((parsed.to as { text: string }).text, user.email)
    assert.equal(parsed.from?.text, 'no-reply@localhost')
    assert.ok(parsed.date instanceof Date)
    assert.match(parsed.messageId ?? '', /@localhost>$/)
    assert.ok((parsed.text ?? '').includes('/account/email-verification?token='))
    assert.ok(typeof parsed.html === 'string' && parsed.html.includes('/account/email-verification?token='))
    const [row] = await outbox(app, user.email)
    assert.equal(row?.status, 'SENT')
    assert.equal(await metric(app, 'mail_sent_total', 'verify-email'), 1)
    assert.equal(await metric(app, 'mail_queued_total', 'verify-email'), 1)
  })

  test('SMTP down for a while: the mail is retried and sent once the server is back, once', async (t) => {
    const smtp = await downSmtp(t)
    const { app } = await buildAppForTest(t, { SMTP_URL: smtp.url, ...RETRY_FAST })
    const user = await signUp(app)
    await waitFor('two attempts failed', async () => await metric(app, 'mail_send_errors_total', 'verify-email') >= 2, 15_000)
    assert.equal(smtp.mails.length, 0)
    await smtp.restart()
    const mail = await smtp.waitFor((m) => m.to.includes(user.email.toLowerCase()), 15_000)
    // The token of the mail that went out is the live one: every failed attempt made its own, voiding the one before.
    assert.equal((await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: tokenIn(mail) } })).statusCode, 204)
    await waitFor('the outbox says sent', async () => (await outbox(app, user.email))[0]?.status === 'SENT', 15_000)
    assert.equal(smtp.mails.filter((m) => m.to.includes(user.email.toLowerCase())).length, 1)
    assert.equal(await metric(app, 'mail_sent_total', 'verify-email'), 1)
  })

  test('past the last retry the mail is failed, counted, and its error kept', async (t) => {
    const smtp = await downSmtp(t)
    const { app } = await buildAppForTest(t, { SMTP_URL: smtp.url, MAIL_POLL_MS: '50', MAIL_RETRY_SCHEDULE: '0,0.1' })
    const user = await signUp(app)
    await waitFor('the mail is failed', async () => (await outbox(app, user.email))[0]?.status === 'FAILED', 15_000)
    const [row] = await outbox(app, user.email)
    assert.equal(Number(row!.attempts), 2)
    assert.match(row!.last_error ?? '', /ECONNREFUSED/)
    assert.equal(await metric(app, 'mail_failed_total', 'verify-email'), 1)
  })

  test('a mail whose account is gone by the time it is sent is skipped', async (t) => {
    const smtp = await downSmtp(t)
    const { app } = await buildAppForTest(t, { SMTP_URL: smtp.url, ...RETRY_FAST })
    const user = await signUp(app)
    await waitFor('an attempt failed', async () => await metric(app, 'mail_send_errors_total', 'verify-email') >= 1, 15_000)
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: 'correct horse battery' } })
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: { authorization: `Bearer ${login.json().token}` } })).statusCode, 204)
    await smtp.restart()
    await waitFor('the mail is skipped', async () => (await outbox(app, user.email))[0]?.status === 'SKIPPED', 15_000)
    assert.equal(smtp.mails.length, 0)
    assert.equal(await metric(app, 'mail_skipped_total', 'verify-email'), 1)
  })

  test('a slow SMTP server never holds a request: the answers come while a mail is in the server\'s hands', async (t) => {
    // The server takes every mail and answers none until the test ends (stop() drops them).
    const smtp = await SmtpCapture.start({ delayMs: 600_000 })
    t.after(async () => { await smtp.stop() })
    const { app } = await buildAppForTest(t, { SMTP_URL: smtp.url, MAIL_POLL_MS: '50', MAIL_PER_ADDRESS_PER_MINUTE: '100', MAIL_PER_ADDRESS_PER_HOUR: '100' })
    const user = await signUp(app)
    await waitFor('the server holds the sign-up mail', async () => smtp.holding >= 1, 15_000)
    for (let i = 0; i < 3; i++) {
      assert.equal((await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email: user.email } })).statusCode, 202)
    }
    // Answered while the sender still waits for the server on the sign-up mail.
    assert.equal(smtp.mails.length, 0)
    assert.ok(smtp.holding >= 1)
    assert.equal((await outbox(app, user.email)).find((row) => row.kind === 'verify-email')?.status, 'PENDING')
  })
})
