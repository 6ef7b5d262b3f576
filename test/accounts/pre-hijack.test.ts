import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, tokenOf, uniqueEmail, type TestUser } from '../helper.js'
import { SmtpCapture, tokenIn } from '../support/smtp-capture.js'
import { startTestProvider } from '../support/oidc-provider.js'
import { createProduct } from '../products/fixtures.js'
import { startReceiver } from '../support/webhook-receiver.js'
import { codeOf, makeKey, resetByMail, turnOnFactor } from './fixtures.js'

// Pre-hijacking (Sudhodanan and Paverd, "Pre-hijacked accounts", USENIX Security 2022): someone
// makes an account with the owner's address before the owner does, prepares it (a provider
// link, an API key, a webhook endpoint, a second factor), and waits. The owner, told at sign-up
// that the address is taken, takes the account by a password reset, the documented way. The
// reset is the first proof of the address: everything prepared before it must end. End to end
// over HTTP, with a real OpenID provider and a real SMTP server on loopback.

const REDIRECT = 'https://app.example/signed-in'
const client = { clientId: 'api-local', clientSecret: 'local secret that is long enough', redirectUris: [REDIRECT] }
const provider = await startTestProvider({ clients: [client] })
const smtp = await SmtpCapture.start()
const receiver = await startReceiver()
// An administrator's endpoint hears every event: once it has the owner's order, so would have the squatter's.
const control = await startReceiver()
const ENV = {
  SMTP_URL: smtp.url,
  MAIL_POLL_MS: '50',
  OIDC_PROVIDERS: JSON.stringify([{ id: 'local', issuer: provider.issuer, ...client }]),
  SECRET_KEY: '0f'.repeat(32),
  WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
  WEBHOOK_POLL_MS: '50'
}
const { app, close } = await buildTestApp(ENV)
const strict = await buildTestApp({ ...ENV, REQUIRE_EMAIL_VERIFICATION: 'true' })
after(async () => { await close(); await strict.close(); await provider.close(); await smtp.stop(); await receiver.close(); await control.close() })

const OWNER_PASSWORD = 'the owner chose this one'

/** A sign-in at the provider as `sub`, finished at the service: its answer. */
async function providerSignIn (target: typeof app, sub: string) {
  const begun = await target.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })
  assert.equal(begun.statusCode, 201, begun.body)
  const back = await provider.signIn(begun.json().authorizationUrl, sub)
  return await target.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: back.searchParams.get('code'), state: back.searchParams.get('state') } })
}

/** The owner, refused at sign-up, takes the account by a reset and logs in: their session. */
async function ownerTakesIt (target: typeof app, email: string): Promise<TestUser> {
  assertError(await target.inject({ method: 'POST', url: '/v1/users', payload: { email, password: OWNER_PASSWORD, name: 'Owner' } }), 409, 'DUPLICATE_EMAIL')
  assert.equal((await resetByMail(target, smtp, email, OWNER_PASSWORD)).statusCode, 204)
  const loggedIn = await target.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password: OWNER_PASSWORD } })
  assert.equal(loggedIn.statusCode, 201, loggedIn.body)
  assert.equal(loggedIn.json().user.emailVerified, true)
  const token = loggedIn.json().token as string
  return { id: loggedIn.json().user.id, email, name: 'Owner', password: OWNER_PASSWORD, token, auth: { authorization: `Bearer ${token}` } }
}

describe('an account prepared for its owner by someone else', { timeout: 120_000 }, () => {
  for (const [label, target] of [['by default', app], ['with REQUIRE_EMAIL_VERIFICATION', strict.app]] as const) {
    test(`through a provider that does not verify addresses (${label}): the owner's reset ends the link`, async () => {
      const victim = uniqueEmail('victim')
      const sub = `attacker-${Date.now()}-${label.length}`
      provider.accounts.set(sub, { sub, email: victim, email_verified: false, name: 'Attacker' })
      // The attacker's sign-in makes the account for the victim's address and links it.
      const first = await providerSignIn(target, sub)
      if (label === 'by default') assert.equal(first.statusCode, 201, first.body)
      else assertError(first, 403, 'EMAIL_NOT_VERIFIED')
      const owner = await ownerTakesIt(target, victim)
      assert.deepEqual((await target.inject({ method: 'GET', url: `/v1/users/${owner.id}/identities`, headers: owner.auth })).json(), [])
      // The attacker signs in again: not into the owner's account (the address is taken by it,
      // proven on this side only, so no link is made: 409).
      assertError(await providerSignIn(target, sub), 409, 'DUPLICATE_EMAIL')
      assert.equal((await target.inject({ method: 'GET', url: '/v1/sessions/current', headers: owner.auth })).json().user.id, owner.id)
    })
  }

  test('with a password, an API key and a webhook endpoint: the owner\'s reset ends them', async () => {
    const victim = uniqueEmail('victim')
    const squatter = await createUser(app, { email: victim, name: 'Squatter' })
    const key = await makeKey(app, squatter, ['orders:read', 'events:read', 'webhooks:read', 'webhooks:write'])
    // And a change of address of the squatter's own, waiting for its link.
    const theirs = uniqueEmail('squatter')
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${squatter.id}`, headers: squatter.auth, payload: { email: theirs, name: 'Squatter' } })).statusCode, 200)
    const theirLink = tokenIn(await smtp.next(theirs, 'Confirm your new e-mail address'))
    const endpoint = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: squatter.auth, payload: { url: receiver.url, events: ['order.created'] } })
    assert.equal(endpoint.statusCode, 201, endpoint.body)
    assert.equal((await app.inject({ method: 'GET', url: '/v1/orders', headers: key })).statusCode, 200)

    const owner = await ownerTakesIt(app, victim)
    assertError(await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: squatter.auth }), 401, 'AUTHENTICATION_REQUIRED')
    assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: owner.auth })).json().user.pendingEmail, null)
    assertError(await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: theirLink } }), 400, 'INVALID_TOKEN')
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/api-keys', headers: owner.auth })).json(), [])
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers: owner.auth })).json(), [])
    // The owner shops; the squatter's key reads nothing, and their endpoint hears nothing.
    const admin = await createAdmin(app)
    const watching = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: admin.auth, payload: { url: control.url, events: ['order.created'] } })
    assert.equal(watching.statusCode, 201, watching.body)
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await app.inject({ method: 'POST', url: '/v1/orders', headers: owner.auth, payload: { productId: product.id, quantity: 1 } })
    assert.equal(order.statusCode, 201, order.body)
    assertError(await app.inject({ method: 'GET', url: '/v1/orders', headers: key }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'GET', url: '/v1/events', headers: key }), 401, 'AUTHENTICATION_REQUIRED')
    await control.waitFor(1)
    assert.equal(receiver.received.length, 0)
    // The keys' end is in the owner's feed, as any revocation.
    const feed = (await app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: owner.auth })).json() as Array<{ type: string }>
    assert.ok(feed.some((event) => event.type === 'api_key.revoked'), JSON.stringify(feed.map((e) => e.type)))
  })

  test('with a second factor: the owner\'s reset ends it, and the owner logs in without one', async () => {
    const victim = uniqueEmail('victim')
    const squatter = await createUser(app, { email: victim, name: 'Squatter' })
    const secret = await turnOnFactor(app, squatter)
    const waiting = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: victim, password: squatter.password } })
    assertError(waiting, 401, 'MFA_REQUIRED')
    await ownerTakesIt(app, victim)
    // The squatter's log-in that waited for its code ends too.
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions', payload: { challenge: waiting.json().challenge, code: codeOf(secret) } }), 401, 'INVALID_MFA_CODE')
    const rows = await app.db.selectFrom('totp_factors').select('totp_factors.id').innerJoin('users', 'users.id', 'totp_factors.user_id').where('users.email', '=', victim).execute()
    assert.deepEqual(rows, [])
  })

  test('a reset of an address proven before is the owner\'s own recovery: keys, endpoints and the factor stay', async () => {
    const user = await createUser(app)
    const key = await makeKey(app, user, ['orders:read'])
    // The owner proves the address with the verification mail sign-up sent.
    const token = tokenIn(await smtp.next(user.email, 'Verify your e-mail address'))
    assert.equal((await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })).statusCode, 204)
    assert.equal((await resetByMail(app, smtp, user.email, OWNER_PASSWORD)).statusCode, 204)
    assert.equal((await app.inject({ method: 'GET', url: '/v1/orders', headers: key })).statusCode, 200)
    const relogged = await tokenOf(app, user.email, OWNER_PASSWORD)
    assert.equal((await app.inject({ method: 'GET', url: '/v1/api-keys', headers: { authorization: `Bearer ${relogged}` } })).json().length, 1)
  })
})
