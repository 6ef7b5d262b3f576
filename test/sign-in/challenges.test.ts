import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { emailKey } from '../../src/http/email.js'
import { assertError, buildTestApp, createUser, tokenOf, type TestUser } from '../helper.js'
import { SmtpCapture } from '../support/smtp-capture.js'
import { codeOf, resetByMail, turnOnFactor } from '../accounts/fixtures.js'

// A log-in waiting for its second factor's code (a challenge) is part of the password that began
// it: a reset or a change of the password ends it. And it takes five guesses in all, however
// they are sent: the sixth, even at the same moment, finds it void.

const smtp = await SmtpCapture.start()
// The per-address log-in limit is lifted: the bursts below are forty wrong codes for one address.
const { app, close } = await buildTestApp({ SMTP_URL: smtp.url, MAIL_POLL_MS: '50', SECRET_KEY: '0f'.repeat(32), LOGIN_FAILURES_PER_EMAIL: '1000000' })
after(async () => { await close(); await smtp.stop() })

async function proven (user: TestUser): Promise<void> {
  await write(app.db, async (trx) => { await trx.updateTable('users').set({ email_verified: 1 }).where('id', '=', BigInt(user.id)).execute() })
}
async function challengeOf (email: string, password: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password } })
  assertError(res, 401, 'MFA_REQUIRED')
  return res.json().challenge
}
const answer = async (challenge: string, code: string) => await app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge, code } })

describe('second-factor challenges', { timeout: 60_000 }, () => {
  test('a password reset ends the log-ins waiting for a code', async () => {
    const user = await createUser(app)
    await proven(user)
    const secret = await turnOnFactor(app, user)
    const challenge = await challengeOf(user.email, user.password)
    assert.equal((await resetByMail(app, smtp, user.email, 'a new password now')).statusCode, 204)
    assertError(await answer(challenge, codeOf(secret)), 401, 'INVALID_MFA_CODE')
    // The factor itself stays (the address was proven before): the new password asks for it.
    assert.equal((await answer(await challengeOf(user.email, 'a new password now'), codeOf(secret))).statusCode, 201)
  })

  test('a password change ends them too', async () => {
    const user = await createUser(app)
    const other = { authorization: `Bearer ${await tokenOf(app, user.email, user.password)}` }
    const secret = await turnOnFactor(app, user)
    const challenge = await challengeOf(user.email, user.password)
    const changed = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/password`, headers: other, payload: { currentPassword: user.password, newPassword: 'a changed password' } })
    assert.equal(changed.statusCode, 204, changed.body)
    assertError(await answer(challenge, codeOf(secret)), 401, 'INVALID_MFA_CODE')
  })

  test('five guesses in all, however sent: of twelve at once, five are looked at; the right code after them is refused', async () => {
    const user = await createUser(app)
    const secret = await turnOnFactor(app, user)
    const counted = async () => (await app.db.selectFrom('login_failures').select('id').where('email', '=', emailKey(user.email)).execute()).length
    for (let round = 0; round < 3; round++) {
      const challenge = await challengeOf(user.email, user.password)
      const before = await counted()
      const wrong = await Promise.all(Array.from({ length: 12 }, async () => await answer(challenge, '000000')))
      for (const res of wrong) assertError(res, 401, 'INVALID_MFA_CODE')
      // Each guess looked at counts against the account's address; the ones that found the
      // challenge void count against the client alone.
      assert.equal(await counted() - before, 5, `round ${round}`)
      assertError(await answer(challenge, codeOf(secret)), 401, 'INVALID_MFA_CODE')
    }
  })
})
