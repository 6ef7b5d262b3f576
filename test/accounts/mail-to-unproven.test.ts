import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, uniqueEmail } from '../helper.js'
import { SmtpCapture, tokenIn } from '../support/smtp-capture.js'
import { RESET_SUBJECT } from './fixtures.js'

// Mail to an address nobody has proven is mail to a stranger, as far as the service knows: every
// such mail counts against the address's limits (one a minute, five an hour), so nobody can
// flood a mailbox through sign-ups or by proposing its address again and again. And a link is
// good only for the address and account it was mailed for.

const smtp = await SmtpCapture.start()
// The limits as shipped here; the second app lifts them for the flows that mail one address twice.
const limited = await buildTestApp({ SMTP_URL: smtp.url, MAIL_POLL_MS: '50', MAIL_PER_ADDRESS_PER_MINUTE: '1', MAIL_PER_ADDRESS_PER_HOUR: '5' })
const open = await buildTestApp({ SMTP_URL: smtp.url, MAIL_POLL_MS: '50' })
after(async () => { await limited.close(); await open.close(); await smtp.stop() })

const CONFIRM_SUBJECT = 'Confirm your new e-mail address'

describe('mail to addresses nobody has proven', { timeout: 60_000 }, () => {
  test('proposing a stranger\'s address again and again mails it once a minute; the PUT past that is 429 and changes nothing', async () => {
    const { app } = limited
    const attacker = await createUser(app, { name: 'Spam Spam Spam' })
    const target = uniqueEmail('target')
    const put = async (email: string) => await app.inject({ method: 'PUT', url: `/v1/users/${attacker.id}`, headers: attacker.auth, payload: { email, name: attacker.name } })
    assert.equal((await put(target)).statusCode, 200)
    const answers = []
    for (let i = 0; i < 6; i++) {
      assert.equal((await put(uniqueEmail('elsewhere'))).statusCode, 200)
      answers.push(await put(target))
    }
    for (const answer of answers) {
      assertError(answer, 429, 'TOO_MANY_REQUESTS')
      assert.ok(Number(answer.headers['retry-after']) >= 1 && Number(answer.headers['retry-after']) <= 60)
    }
    // The last proposal stands: the refused ones changed nothing.
    const current = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: attacker.auth })
    assert.notEqual(current.json().user.pendingEmail, target)
    // One mail was queued for the target in all (and not even sent: its proposal was replaced
    // before the sender got to it, so its link would prove nothing).
    const queued = await app.db.selectFrom('mail_outbox').select('id').where('address', '=', target).execute()
    assert.equal(queued.length, 1)
  })

  test('sign-up\'s own verification mail counts: a second mail to the address within the minute is 429', async () => {
    const { app } = limited
    const user = await createUser(app)
    assertError(await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload: { email: user.email } }), 429, 'TOO_MANY_REQUESTS')
    // An account with a proven address is not a stranger: its notices are not counted.
  })

  test('a reset link is good only while the account\'s address is the one it was mailed to', async () => {
    const { app } = open
    const user = await createUser(app)
    assert.equal((await app.inject({ method: 'POST', url: '/v1/password-reset-tokens', payload: { email: user.email } })).statusCode, 202)
    const resetToken = tokenIn(await smtp.next(user.email, RESET_SUBJECT))
    const moved = uniqueEmail('moved')
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: moved, name: user.name } })).statusCode, 200)
    const confirm = tokenIn(await smtp.next(moved, CONFIRM_SUBJECT))
    assert.equal((await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: confirm } })).statusCode, 204)
    assertError(await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { token: resetToken, newPassword: 'taken by the old mailbox' } }), 400, 'INVALID_TOKEN')
    assert.equal((await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: moved, password: user.password } })).statusCode, 201)
  })

  test('the anonymous ask never mails an address that is only proposed; it mails an account\'s own unverified one', async () => {
    const { app } = open
    const proposer = await createUser(app)
    const owner = uniqueEmail('owner')
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${proposer.id}`, headers: proposer.auth, payload: { email: owner, name: proposer.name } })).statusCode, 200)
    await smtp.next(owner, CONFIRM_SUBJECT)
    assert.equal((await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload: { email: owner } })).statusCode, 202)
    const unverified = await createUser(app)
    assert.equal((await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload: { email: unverified.email } })).statusCode, 202)
    // The unverified account's two mails (sign-up's and the one asked for) arrive; for the
    // proposed address nothing more than the proposer's own confirmation.
    await smtp.next(unverified.email, 'Verify your e-mail address')
    await smtp.next(unverified.email, 'Verify your e-mail address')
    const asked = await app.db.selectFrom('mail_outbox').select('status').where('address', '=', owner).where('user_id', 'is', null).executeTakeFirstOrThrow()
    assert.equal(asked.status, 'SKIPPED')
    assert.equal(smtp.mails.filter((mail) => mail.to.includes(owner)).length, 1)
  })
})
