import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { buildTestApp, createUser, uniqueEmail } from '../helper.js'
import { SmtpCapture } from '../support/smtp-capture.js'
import { startTestProvider } from '../support/oidc-provider.js'
import { turnOnFactor } from './fixtures.js'

// Every new way into an account is told to its address at once, so an owner whose session or
// password was used learns of it: a second factor turned on, a provider linked to an existing
// account, an API key made (its name, prefix and scopes, never the key).

const REDIRECT = 'https://app.example/signed-in'
const client = { clientId: 'api-local', clientSecret: 'local secret that is long enough', redirectUris: [REDIRECT] }
const provider = await startTestProvider({ clients: [client] })
const smtp = await SmtpCapture.start()
const { app, close } = await buildTestApp({
  SMTP_URL: smtp.url,
  MAIL_POLL_MS: '50',
  SECRET_KEY: '0f'.repeat(32),
  OIDC_PROVIDERS: JSON.stringify([{ id: 'local', issuer: provider.issuer, ...client }])
})
after(async () => { await close(); await provider.close(); await smtp.stop() })

describe('notices of a new way in', { timeout: 60_000 }, () => {
  test('a second factor turned on', async () => {
    const user = await createUser(app)
    await turnOnFactor(app, user)
    const mail = await smtp.next(user.email, 'A second factor was turned on')
    assert.match(mail.text, /authenticator app was added/)
  })

  test('an API key made: its name, prefix and scopes, never the key', async () => {
    const user = await createUser(app)
    const created = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'nightly export', scopes: ['orders:read', 'events:read'] } })
    assert.equal(created.statusCode, 201, created.body)
    const { key, prefix } = created.json() as { key: string, prefix: string }
    const mail = await smtp.next(user.email, 'A new API key was created')
    assert.ok(mail.text.includes('nightly export') && mail.text.includes(prefix) && mail.text.includes('orders:read, events:read'), mail.text)
    assert.ok(!mail.text.includes(key) && !mail.html.includes(key), 'the key itself is never mailed')
    assert.ok(!mail.text.includes(key.slice(prefix.length, prefix.length + 12)), 'nor any part of its secret')
  })

  test('a provider linked to an existing account (and none for an account the sign-in makes)', async () => {
    const user = await createUser(app)
    await write(app.db, async (trx) => { await trx.updateTable('users').set({ email_verified: 1 }).where('id', '=', BigInt(user.id)).execute() })
    const sub = `linked-${Date.now()}`
    provider.accounts.set(sub, { sub, email: user.email, email_verified: true, name: 'Same Person' })
    const begun = await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })
    const back = await provider.signIn(begun.json().authorizationUrl, sub)
    const signedIn = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: back.searchParams.get('code'), state: back.searchParams.get('state') } })
    assert.equal(signedIn.statusCode, 201, signedIn.body)
    assert.equal(signedIn.json().user.id, user.id)
    const mail = await smtp.next(user.email, 'A sign-in provider was linked to your account')
    assert.match(mail.text, /identity provider local/)

    const newcomer = `new-${Date.now()}`
    const address = uniqueEmail('newcomer')
    provider.accounts.set(newcomer, { sub: newcomer, email: address, email_verified: true, name: 'New' })
    const begunAgain = await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })
    const backAgain = await provider.signIn(begunAgain.json().authorizationUrl, newcomer)
    const made = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: backAgain.searchParams.get('code'), state: backAgain.searchParams.get('state') } })
    assert.equal(made.statusCode, 201, made.body)
    const queued = await app.db.selectFrom('mail_outbox').select('kind').where('user_id', '=', BigInt(made.json().user.id)).execute()
    assert.deepEqual(queued, [])
  })
})
