import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { ensureAdmin } from '../../src/users/admin-bootstrap.js'
import type { FastifyInstance } from 'fastify'
import { assertError, buildTestApp, freshDatabaseUrl, uniqueEmail, type TestUser } from '../helper.js'
import { makeKey, turnOnFactor } from '../accounts/fixtures.js'
import { startTestProvider } from '../support/oidc-provider.js'

// ADMIN_EMAIL naming an address a squatter already holds: the operator restarts the service
// with it, and the account becomes the administrator's. Whatever the squatter set up on it (a
// provider link, a second factor, an API key, sessions) must end before the promotion, or the
// squatter signs in as the administrator and reads every order with their key.

const REDIRECT = 'https://app.example/signed-in'
const client = { clientId: 'api-local', clientSecret: 'local secret that is long enough', redirectUris: [REDIRECT] }
const provider = await startTestProvider({ clients: [client] })
after(async () => { await provider.close() })
/** A sign-in at the provider as `sub`, finished at the service: its answer. */
async function providerSignIn (app: FastifyInstance, sub: string) {
  const begun = await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })
  assert.equal(begun.statusCode, 201, begun.body)
  const back = await provider.signIn(begun.json().authorizationUrl, sub)
  return await app.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: back.searchParams.get('code'), state: back.searchParams.get('state') } })
}

const ENV = { OIDC_PROVIDERS: JSON.stringify([{ id: 'local', issuer: provider.issuer, ...client }]), SECRET_KEY: '0f'.repeat(32) }

test('ADMIN_EMAIL across a restart: the squatter\'s link, factor, key and sessions end; the operator\'s password is the way in', { timeout: 120_000 }, async () => {
  const database = await freshDatabaseUrl()
  after(async () => { await database.drop() })
  const email = uniqueEmail('operator')
  const sub = `squatter-${Date.now()}`

  // Before the restart: the squatter holds the address through a provider that does not verify
  // addresses, with everything they could prepare on it.
  const before = await buildTestApp(ENV, { database })
  provider.accounts.set(sub, { sub, email, email_verified: false, name: 'Squatter' })
  const signedIn = await providerSignIn(before.app, sub)
  assert.equal(signedIn.statusCode, 201, signedIn.body)
  const squatter: TestUser = { id: signedIn.json().user.id, email, name: 'Squatter', password: '', token: signedIn.json().token, auth: { authorization: `Bearer ${signedIn.json().token as string}` } }
  const key = await makeKey(before.app, squatter, ['orders:read', 'events:read'])
  await turnOnFactor(before.app, squatter)
  await before.close()

  // The operator restarts the service with ADMIN_EMAIL naming that address.
  const afterwards = await buildTestApp({ ...ENV, ADMIN_EMAIL: email, ADMIN_PASSWORD: 'the operator password' }, { database })
  after(async () => { await afterwards.close() })
  const { app } = afterwards
  assert.equal(await ensureAdmin(app.db, email, 'the operator password'), 'updated')

  assertError(await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: squatter.auth }), 401, 'AUTHENTICATION_REQUIRED')
  assertError(await app.inject({ method: 'GET', url: '/v1/orders', headers: key }), 401, 'AUTHENTICATION_REQUIRED')
  // The squatter's provider sign-in reaches nothing of the administrator's.
  // (Its link is gone; a new account for the address, which the administrator's holds, is 409.)
  assertError(await providerSignIn(app, sub), 409, 'DUPLICATE_EMAIL')

  // The operator's password is the way in: no factor asked, nothing of the squatter's left.
  const loggedIn = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password: 'the operator password' } })
  assert.equal(loggedIn.statusCode, 201, loggedIn.body)
  assert.equal(loggedIn.json().user.role, 'ADMIN')
  assert.equal(loggedIn.json().user.emailVerified, true)
  const auth = { authorization: `Bearer ${loggedIn.json().token as string}` }
  assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/users/${squatter.id}/identities`, headers: auth })).json(), [])
  assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/api-keys', headers: auth })).json(), [])
  // A restart with the same settings leaves the administrator alone.
  assert.equal(await ensureAdmin(app.db, email, 'the operator password'), 'unchanged')
  assert.equal((await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: auth })).statusCode, 200)
})
