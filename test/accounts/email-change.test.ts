import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { sql } from 'kysely'
import { assertError, buildTestApp, createUser, logIn, type TestUser, uniqueEmail, waitFor } from '../helper.js'
import { SmtpCapture, tokenIn } from '../support/smtp-capture.js'

// A change of address through a real SMTP server: PUT proposes the new address (it becomes
// pendingEmail), the link mailed to it makes it the account's address and the old address is
// told; an address taken by another account, before or meanwhile, is 409 DUPLICATE_EMAIL.

const TIMEOUT = { timeout: 60_000 }
const VERIFY_SUBJECT = 'Verify your e-mail address'
const CONFIRM_SUBJECT = 'Confirm your new e-mail address'
const CHANGED_SUBJECT = 'Your e-mail address was changed'

const smtp = await SmtpCapture.start()
// The failed-token limit is lifted too: the race below answers nine 409s from one client.
const { app, close } = await buildTestApp({
  SMTP_URL: smtp.url,
  MAIL_POLL_MS: '100',
  MAIL_PER_ADDRESS_PER_MINUTE: '1000000',
  MAIL_PER_ADDRESS_PER_HOUR: '1000000',
  TOKEN_FAILURES_PER_CLIENT_PER_MINUTE: '1000000'
})
after(async () => { await close(); await smtp.stop() })

/**
 * Signs up and logs in, and waits for sign-up's own verification mail: its token is made when
 * it is sent, and making it voids the account's other verification tokens, so a confirmation
 * asked for afterwards must not race it.
 */
async function signUp (name = 'Tester'): Promise<TestUser> {
  const user = await createUser(app, { name })
  await smtp.next(user.email, VERIFY_SUBJECT)
  return user
}

const put = (user: TestUser, email: string, id: number = user.id) =>
  app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers: user.auth, payload: { email, name: user.name } })
const verify = (token: string) => app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })
const current = (user: TestUser) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })

/** Proposes a new address and returns the token of the confirmation mailed to it. */
async function propose (user: TestUser, email: string): Promise<string> {
  const res = await put(user, email)
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().pendingEmail, email)
  return tokenIn(await smtp.next(email, CONFIRM_SUBJECT))
}

describe('changing the address', TIMEOUT, () => {
  test('end to end: proposed, confirmed from the new address, the old one told, the event recorded', TIMEOUT, async () => {
    const user = await signUp()
    const fresh = uniqueEmail('moved')
    const proposed = await put(user, fresh)
    assert.equal(proposed.statusCode, 200, proposed.body)
    assert.deepEqual(proposed.json(), { id: user.id, email: user.email, name: user.name, emailVerified: false, pendingEmail: fresh })

    const confirm = await smtp.next(fresh, CONFIRM_SUBJECT)
    assert.deepEqual(confirm.to, [fresh.toLowerCase()])
    const token = tokenIn(confirm)
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    const verified = await verify(token)
    assert.equal(verified.statusCode, 204, verified.body)
    assert.equal(verified.body, '')

    const me = await current(user)
    assert.equal(me.statusCode, 200, me.body)
    assert.equal(me.json().user.email, fresh)
    assert.equal(me.json().user.pendingEmail, null)
    assert.equal(me.json().user.emailVerified, true)

    const notice = await smtp.next(user.email, CHANGED_SUBJECT)
    assert.deepEqual(notice.to, [user.email.toLowerCase()])
    assert.ok(notice.text.includes(fresh), notice.text)
    assert.ok(!notice.raw.includes(token), 'the notice carries no token')

    assert.equal((await logIn(app, { email: fresh, password: user.password })).statusCode, 201)
    assertError(await logIn(app, { email: user.email, password: user.password }), 401, 'INVALID_CREDENTIALS')
    assertError(await verify(token), 400, 'INVALID_TOKEN')

    const feed = await app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: user.auth })
    assert.equal(feed.statusCode, 200, feed.body)
    const updates = (feed.json() as Array<{ type: string, data?: Record<string, unknown> }>).filter((e) => e.type === 'user.updated')
    assert.ok(updates.some((e) => e.data?.email === fresh && e.data.pendingEmail === null && e.data.emailVerified === true),
      JSON.stringify(updates))
    assert.ok(!feed.body.includes(token), 'no mailed token in the feed')
    assert.ok(!feed.body.includes(user.token), 'no log-in token in the feed')
  })

  test('the proposed address taken by a sign-up meanwhile: 409 DUPLICATE_EMAIL, the address unchanged', TIMEOUT, async () => {
    const user = await signUp()
    const wanted = uniqueEmail('wanted')
    const token = await propose(user, wanted)
    // Only proposed: another account may still sign up with it.
    const newcomer = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: wanted, password: 'another password', name: 'Newcomer' } })
    assert.equal(newcomer.statusCode, 201, newcomer.body)
    assertError(await verify(token), 409, 'DUPLICATE_EMAIL')
    const me = (await current(user)).json().user
    assert.equal(me.email, user.email)
    assert.equal(me.emailVerified, false)
    assert.equal((await logIn(app, { email: user.email, password: user.password })).statusCode, 201)
    const holders = await app.db.selectFrom('users').select('id').where(sql<string>`lower(email)`, '=', wanted.toLowerCase()).execute()
    assert.deepEqual(holders.map((row) => Number(row.id)), [newcomer.json().id])
  })

  test('back to the current address (another case) drops the proposal and voids its token', TIMEOUT, async () => {
    const user = await signUp()
    const token = await propose(user, uniqueEmail('dropped'))
    const back = await put(user, user.email.toUpperCase())
    assert.equal(back.statusCode, 200, back.body)
    assert.equal(back.json().pendingEmail, null)
    assert.equal(back.json().email.toLowerCase(), user.email.toLowerCase())
    assertError(await verify(token), 400, 'INVALID_TOKEN')
    const me = (await current(user)).json().user
    assert.equal(me.pendingEmail, null)
    assert.equal(me.email.toLowerCase(), user.email.toLowerCase())
  })

  test('an address another account has: 409 DUPLICATE_EMAIL at the PUT, and no mail queued for it', TIMEOUT, async () => {
    const user = await signUp()
    const owner = await signUp()
    for (const address of [owner.email, owner.email.toUpperCase()]) {
      assertError(await put(user, address), 409, 'DUPLICATE_EMAIL')
    }
    const me = (await current(user)).json().user
    assert.equal(me.email, user.email)
    assert.equal(me.pendingEmail, null)
    // The only mail ever queued to the address is the owner's own sign-up verification.
    const queued = await app.db.selectFrom('mail_outbox').select(['kind', 'user_id'])
      .where(sql<string>`lower(address)`, '=', owner.email.toLowerCase()).execute()
    assert.deepEqual(queued.map((row) => ({ kind: row.kind, user: Number(row.user_id) })), [{ kind: 'verify-email', user: owner.id }])
  })

  test('ten accounts confirm the same address at once: exactly one gets it', TIMEOUT, async () => {
    const users = await Promise.all(Array.from({ length: 10 }, async (_, i) => await signUp(`Racer ${i}`)))
    const wanted = uniqueEmail('contested')
    for (const user of users) {
      const res = await put(user, wanted)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().pendingEmail, wanted)
    }
    const tokens: string[] = []
    for (let i = 0; i < users.length; i++) tokens.push(tokenIn(await smtp.next(wanted, CONFIRM_SUBJECT)))
    assert.equal(new Set(tokens).size, 10)

    const answers = await Promise.all(tokens.map(verify))
    const statuses = answers.map((res) => res.statusCode)
    assert.equal(statuses.filter((s) => s === 204).length, 1, statuses.join(', '))
    for (const res of answers) if (res.statusCode !== 204) assertError(res, 409, 'DUPLICATE_EMAIL')

    const holders = await app.db.selectFrom('users').select('id').where(sql<string>`lower(email)`, '=', wanted.toLowerCase()).execute()
    assert.equal(holders.length, 1)
    const emails = await Promise.all(users.map(async (user) => (await current(user)).json().user.email as string))
    assert.equal(emails.filter((email) => email === wanted).length, 1)
    // The nine others keep their own addresses.
    assert.equal(users.filter((user, i) => emails[i] === user.email).length, 9)
  })

  test('a pending address is proven only by the account that proposed it: asked for by address, nothing is mailed; its link expired, the account asks again with PUT', TIMEOUT, async () => {
    const user = await signUp()
    const wanted = uniqueEmail('again')
    const first = await propose(user, wanted)
    // Whoever asks by address gets the same 202, but the pending address is not mailed: the
    // sender finds no account whose own address it is, and skips the mail.
    const asked = await app.inject({ method: 'POST', url: '/v1/email-verification-tokens', payload: { email: wanted } })
    assert.equal(asked.statusCode, 202, asked.body)
    await waitFor('the anonymous ask to be skipped', async () => (await app.db.selectFrom('mail_outbox').select('status').where('address', '=', wanted).where('user_id', 'is', null).executeTakeFirst())?.status === 'SKIPPED')
    // The account asking again while its link is good changes nothing; once it expired, a new one goes out.
    assert.equal((await put(user, wanted)).statusCode, 200)
    await write(app.db, async (trx) => { await trx.updateTable('account_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('user_id', '=', BigInt(user.id)).where('purpose', '=', 'verify-email').execute() })
    assertError(await verify(first), 400, 'INVALID_TOKEN')
    const again = await put(user, wanted)
    assert.equal(again.statusCode, 200, again.body)
    assert.equal(again.json().pendingEmail, wanted)
    const second = tokenIn(await smtp.next(wanted, CONFIRM_SUBJECT))
    assert.notEqual(second, first)
    assert.equal((await verify(second)).statusCode, 204)
    assert.equal((await current(user)).json().user.email, wanted)
    // Exactly two confirmations went to the address: the proposal's and the one asked again.
    assert.equal(smtp.mails.filter((mail) => mail.to.includes(wanted) && mail.subject === CONFIRM_SUBJECT).length, 2)
  })

  test("another user's id: 403 ACCESS_DENIED", TIMEOUT, async () => {
    const user = await signUp()
    const other = await signUp()
    assertError(await put(user, uniqueEmail(), other.id), 403, 'ACCESS_DENIED')
  })
})
