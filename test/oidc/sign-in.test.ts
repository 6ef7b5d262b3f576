import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { write } from '../../src/db/write.js'
import { assertError, buildTestApp, createAdmin, createUser, uniqueEmail } from '../helper.js'
import { startTestProvider } from '../support/oidc-provider.js'
import { base32Decode, totp } from '../support/rfc6238.js'

// Sign-in with an identity provider, end to end against a real OpenID provider on loopback:
// the service begins the flow, the provider's own log-in and consent pages are driven over
// HTTP, and the service finishes it with the code and state the provider sent back.

const REDIRECT = 'https://app.example/signed-in'
const local = { clientId: 'api-local', clientSecret: 'local secret that is long enough', redirectUris: [REDIRECT] }
const other = { clientId: 'api-other', clientSecret: 'other secret that is long enough', redirectUris: [REDIRECT] }
const provider = await startTestProvider({ clients: [local, other] })
// A provider nothing answers for: a port that was free a moment ago.
const gone = await startTestProvider({ clients: [local] })
await gone.close()

const OIDC_PROVIDERS = JSON.stringify([
  { id: 'local', issuer: provider.issuer, ...local },
  { id: 'other', issuer: provider.issuer, ...other },
  { id: 'gone', issuer: gone.issuer, ...local }
])
const { app, close } = await buildTestApp({ OIDC_PROVIDERS, OIDC_TIMEOUT_SECONDS: '1', SECRET_KEY: '0f'.repeat(32) })
after(async () => { await close(); await provider.close() })

let subjects = 0
/** A person at the provider. */
function person (claims: { email?: string, email_verified?: boolean, name?: string } = {}): string {
  const sub = `subject-${++subjects}-${Date.now()}`
  provider.accounts.set(sub, { sub, email: uniqueEmail('oidc'), email_verified: true, name: 'Olga', ...claims })
  return sub
}

async function begin (providerId = 'local', redirectUri = REDIRECT) {
  const res = await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: providerId, redirectUri } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { authorizationUrl: string, expiresAt: string }
}

/** Begins a flow and signs the person in at the provider: what the provider sends back. */
async function callback (sub: string, providerId = 'local') {
  const { authorizationUrl } = await begin(providerId)
  const back = await provider.signIn(authorizationUrl, sub)
  assert.equal(back.origin + back.pathname, REDIRECT)
  return { provider: providerId, code: back.searchParams.get('code')!, state: back.searchParams.get('state')! }
}

const finish = async (payload: unknown) => await app.inject({ method: 'POST', url: '/v1/sessions', payload: payload as object })

async function signIn (sub: string, providerId = 'local') {
  const res = await finish(await callback(sub, providerId))
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { token: string, user: { id: number, email: string, name: string, emailVerified: boolean } }
}

const identities = async (id: number, token: string) => await app.inject({ method: 'GET', url: `/v1/users/${id}/identities`, headers: { authorization: `Bearer ${token}` } })
const unlink = async (id: number, providerId: string, token: string) => await app.inject({ method: 'DELETE', url: `/v1/users/${id}/identities/${providerId}`, headers: { authorization: `Bearer ${token}` } })

async function verifyAddress (id: number): Promise<void> {
  await write(app.db, async (trx) => { await trx.updateTable('users').set({ email_verified: 1 }).where('id', '=', BigInt(id)).execute() })
}

describe('sign-in with an identity provider', { timeout: 120_000 }, () => {
  test('begins the code flow with PKCE (S256), state and nonce at the provider, for 10 minutes', async () => {
    const before = Date.now()
    const { authorizationUrl, expiresAt } = await begin()
    const url = new URL(authorizationUrl)
    assert.equal(url.origin, provider.issuer)
    assert.equal(url.searchParams.get('client_id'), local.clientId)
    assert.equal(url.searchParams.get('redirect_uri'), REDIRECT)
    assert.equal(url.searchParams.get('response_type'), 'code')
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
    assert.match(url.searchParams.get('code_challenge') ?? '', /^[\w-]{43}$/)
    assert.match(url.searchParams.get('state') ?? '', /^[\w-]{43,}$/)
    assert.match(url.searchParams.get('nonce') ?? '', /^[\w-]{43,}$/)
    assert.deepEqual(url.searchParams.get('scope')?.split(' ').sort(), ['email', 'openid', 'profile'])
    const lifetime = Date.parse(expiresAt) - before
    assert.ok(lifetime > 9.9 * 60_000 && lifetime <= 10 * 60_000 + 5_000, String(lifetime))
    // The state is kept only as a hash, and no client secret is in the address.
    assert.ok(!authorizationUrl.includes(local.clientSecret))
    const rows = await app.db.selectFrom('oidc_flows').select('state_hash').execute()
    assert.ok(rows.every((row) => row.state_hash !== url.searchParams.get('state')))
  })

  test('a new person gets a new account: verified as the provider says, no password, user.created, a session', async () => {
    const sub = person({ name: '  Olga Provider Name Too Long For Us  ' })
    const { email } = provider.accounts.get(sub)!
    const signedIn = await signIn(sub)
    assert.equal(signedIn.user.email, email)
    assert.equal(signedIn.user.emailVerified, true)
    assert.equal(signedIn.user.name, 'Olga Provider Name T')
    const me = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${signedIn.token}` } })
    assert.equal(me.statusCode, 200)
    assert.equal(me.json().user.id, signedIn.user.id)
    // No password: a log-in with any is refused like a wrong one.
    assertError(await finish({ email, password: '!' }), 401, 'INVALID_CREDENTIALS')
    assertError(await finish({ email, password: 'correct horse battery' }), 401, 'INVALID_CREDENTIALS')
    const listed = await identities(signedIn.user.id, signedIn.token)
    assert.equal(listed.statusCode, 200)
    assert.deepEqual(listed.json().map((i: { provider: string, subject: string, email: string }) => [i.provider, i.subject, i.email]), [['local', sub, email]])
    const events = await app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: { authorization: `Bearer ${signedIn.token}` } })
    const created = events.json().filter((e: { type: string, resource: { id: number } }) => e.type === 'user.created' && e.resource.id === signedIn.user.id)
    assert.equal(created.length, 1)
    assert.equal(created[0].data.emailVerified, true)
    // The same person again: the same account, found by the subject (the address may change).
    provider.accounts.get(sub)!.email = uniqueEmail('changed')
    const again = await signIn(sub)
    assert.equal(again.user.id, signedIn.user.id)
    assert.equal(again.user.email, email)
  })

  test('an address the provider did not verify makes an unverified account, sent the verification mail', async () => {
    const sub = person({ email_verified: false })
    const signedIn = await signIn(sub)
    assert.equal(signedIn.user.emailVerified, false)
    const queued = await app.db.selectFrom('mail_outbox').select(['kind', 'address']).where('user_id', '=', BigInt(signedIn.user.id)).execute()
    assert.deepEqual(queued.map((m) => m.kind), ['verify-email'])
  })

  test('links to an existing account by address only when both sides verified it', async () => {
    const user = await createUser(app)
    // Unverified on the service's side: refused, nothing linked, no second account.
    const sub = person({ email: user.email })
    assertError(await finish(await callback(sub)), 409, 'DUPLICATE_EMAIL')
    assert.deepEqual((await identities(user.id, user.token)).json(), [])
    // Verified here, but the provider does not vouch for the address: refused too.
    await verifyAddress(user.id)
    const unvouched = person({ email: user.email, email_verified: false })
    assertError(await finish(await callback(unvouched)), 409, 'DUPLICATE_EMAIL')
    // Both verified: linked, and the person is in their own account.
    const signedIn = await signIn(sub)
    assert.equal(signedIn.user.id, user.id)
    assert.deepEqual((await identities(user.id, user.token)).json().map((i: { provider: string }) => i.provider), ['local'])
    // Their password still works.
    assert.equal((await finish({ email: user.email, password: user.password })).statusCode, 201)
  })

  test('a second provider links to the same account; unlinking keeps at least one way in', async () => {
    const sub = person()
    const first = await signIn(sub, 'local')
    await signIn(sub, 'other').then((second) => { assert.equal(second.user.id, first.user.id) })
    const listed = await identities(first.user.id, first.token)
    assert.deepEqual(listed.json().map((i: { provider: string }) => i.provider), ['local', 'other'])
    assert.equal((await unlink(first.user.id, 'other', first.token)).statusCode, 204)
    assertError(await unlink(first.user.id, 'other', first.token), 404, 'IDENTITY_NOT_FOUND')
    // The last provider of an account without a password stays.
    assertError(await unlink(first.user.id, 'local', first.token), 409, 'LAST_SIGN_IN_METHOD')
    assert.deepEqual((await identities(first.user.id, first.token)).json().map((i: { provider: string }) => i.provider), ['local'])
    // An unlinked provider signs in as a new person: the address is the account's, verified on
    // both sides, so it links again.
    assert.equal((await signIn(sub, 'other')).user.id, first.user.id)
  })

  test('an account with a password may unlink its only provider', async () => {
    const user = await createUser(app)
    await verifyAddress(user.id)
    await signIn(person({ email: user.email }))
    assert.equal((await unlink(user.id, 'local', user.token)).statusCode, 204)
    assert.deepEqual((await identities(user.id, user.token)).json(), [])
  })

  test('identities are the account\'s own (an administrator reads them, never unlinks), with a log-in token', async () => {
    const owner = await signIn(person())
    const stranger = await createUser(app)
    assertError(await identities(owner.user.id, stranger.token), 403, 'ACCESS_DENIED')
    const admin = await createAdmin(app)
    const read = await identities(owner.user.id, admin.token)
    assert.equal(read.statusCode, 200, read.body)
    assert.deepEqual(read.json().map((i: { provider: string }) => i.provider), ['local'])
    assertError(await unlink(owner.user.id, 'local', admin.token), 403, 'ACCESS_DENIED')
    assertError(await unlink(owner.user.id, 'local', stranger.token), 403, 'ACCESS_DENIED')
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${owner.user.id}/identities` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${owner.user.id}/identities/local` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await identities(9_007_199_254_740_991, owner.token), 404, 'USER_NOT_FOUND')
    assertError(await unlink(9_007_199_254_740_991, 'local', owner.token), 404, 'USER_NOT_FOUND')
    assertError(await identities(0, owner.token), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await unlink(owner.user.id, 'Not A Provider', owner.token), 400, 'VALIDATION_ERROR', ['provider'])
    const key = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: { authorization: `Bearer ${owner.token}` }, payload: { name: 'bot', scopes: ['posts:write'] } })
    assert.equal(key.statusCode, 201, key.body)
    assertError(await identities(owner.user.id, key.json().key), 403, 'INSUFFICIENT_SCOPE')
  })

  test('bad input when beginning: each field named, the provider and address checked against the configuration', async () => {
    const post = async (payload: unknown) => await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: payload as object })
    assertError(await post({}), 400, 'VALIDATION_ERROR', ['provider', 'redirectUri'])
    assertError(await post({ provider: 'local', redirectUri: REDIRECT, extra: 1 }), 400, 'VALIDATION_ERROR', ['extra'])
    assertError(await post({ provider: 7, redirectUri: ' ' }), 400, 'VALIDATION_ERROR', ['provider', 'redirectUri'])
    assertError(await post({ provider: 'x'.repeat(33), redirectUri: REDIRECT }), 400, 'VALIDATION_ERROR', ['provider'])
    assertError(await post({ provider: 'local', redirectUri: 'x'.repeat(2001) }), 400, 'VALIDATION_ERROR', ['redirectUri'])
    assertError(await post({ provider: 'unknown', redirectUri: REDIRECT }), 400, 'VALIDATION_ERROR', ['provider'])
    assertError(await post({ provider: 'local', redirectUri: 'https://evil.example/signed-in' }), 400, 'VALIDATION_ERROR', ['redirectUri'])
    // Exactly as configured: another path, a query or a trailing slash is another address.
    assertError(await post({ provider: 'local', redirectUri: `${REDIRECT}/` }), 400, 'VALIDATION_ERROR', ['redirectUri'])
    assertError(await post({ provider: 'local', redirectUri: `${REDIRECT}?next=/` }), 400, 'VALIDATION_ERROR', ['redirectUri'])
  })

  test('bad input when finishing: the form is judged by its members; unknown, used, expired and forged states are INVALID_TOKEN', async () => {
    assertError(await finish({ provider: 'local' }), 400, 'VALIDATION_ERROR', ['code', 'state'])
    assertError(await finish({ provider: 'local', code: '', state: ' ' }), 400, 'VALIDATION_ERROR', ['code', 'state'])
    assertError(await finish({ provider: 'local', code: 'x'.repeat(2049), state: 'x'.repeat(257) }), 400, 'VALIDATION_ERROR', ['code', 'state'])
    assertError(await finish({ provider: 'local', code: 'c', state: 's', password: 'p' }), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await finish({ email: 'a@example.com', password: 'p', provider: 'local' }), 400, 'VALIDATION_ERROR', ['provider'])
    assertError(await finish({}), 400, 'VALIDATION_ERROR', ['email', 'password'])
    assertError(await finish({ provider: 'unknown', code: 'c', state: 's' }), 400, 'VALIDATION_ERROR', ['provider'])
    assertError(await finish({ provider: 'local', code: 'c', state: 'not a state this service made' }), 400, 'INVALID_TOKEN')

    const sub = person()
    const sent = await callback(sub)
    // The state names its flow and provider: another provider's is refused (and spends nothing).
    assertError(await finish({ ...sent, provider: 'other' }), 400, 'INVALID_TOKEN')
    assert.equal((await finish(sent)).statusCode, 201)
    // Used: refused, the same for a replay of the whole request.
    assertError(await finish(sent), 400, 'INVALID_TOKEN')

    // Expired: ten minutes after it began.
    const late = await callback(person())
    await write(app.db, async (trx) => { await trx.updateTable('oidc_flows').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute() })
    assertError(await finish(late), 400, 'INVALID_TOKEN')
  })

  test('a code from another flow, or used before, is refused by the provider: INVALID_TOKEN, the flow spent', async () => {
    const sub = person()
    const one = await callback(sub)
    const two = await callback(sub)
    // Flow two's state with flow one's code: its PKCE verifier does not match the code's
    // challenge, so the provider refuses it, and flow two is over.
    assertError(await finish({ ...two, code: one.code }), 400, 'INVALID_TOKEN')
    assertError(await finish(two), 400, 'INVALID_TOKEN')
    // The provider did not spend code one on a wrong verifier: its own flow finishes.
    assert.equal((await finish(one)).statusCode, 201)
    // Code one again, under a new flow's state: a replayed code, refused by the provider.
    const three = await callback(sub)
    assertError(await finish({ ...three, code: one.code }), 400, 'INVALID_TOKEN')
    assertError(await finish(three), 400, 'INVALID_TOKEN')
    // A fresh flow still works.
    assert.equal((await finish(await callback(sub))).statusCode, 201)
  })

  test('an ID token for another audience or with another nonce is refused, and its flow ends', async () => {
    const sub = person()
    for (const tamper of [(c: Record<string, unknown>) => ({ ...c, aud: 'another-client' }), (c: Record<string, unknown>) => ({ ...c, nonce: 'another-nonce' })]) {
      const sent = await callback(sub)
      provider.tamperIdToken = tamper
      try {
        assertError(await finish(sent), 400, 'INVALID_TOKEN')
      } finally {
        provider.tamperIdToken = undefined
      }
      assertError(await finish(sent), 400, 'INVALID_TOKEN')
    }
    const rows = await app.db.selectFrom('user_identities').select('subject').where('subject', '=', sub).execute()
    assert.deepEqual(rows, [])
  })

  test('a provider that is down, slow or answers garbage is 503 with Retry-After, and the same request works once it is back', async () => {
    // Never discovered: begins fail, each trying again (a failed discovery is not kept).
    for (let i = 0; i < 2; i++) {
      const res = await app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'gone', redirectUri: REDIRECT } })
      assertError(res, 503, 'SERVICE_UNAVAILABLE')
      assert.match(String(res.headers['retry-after']), /^\d+$/)
    }

    const sub = person()
    const down = await callback(sub)
    await provider.stop()
    try {
      const res = await finish(down)
      assertError(res, 503, 'SERVICE_UNAVAILABLE')
      assert.match(String(res.headers['retry-after']), /^\d+$/)
    } finally {
      await provider.start()
    }
    assert.equal((await finish(down)).statusCode, 201)

    const slow = await callback(sub)
    provider.delayMs = 5_000
    try {
      assertError(await finish(slow), 503, 'SERVICE_UNAVAILABLE')
    } finally {
      provider.delayMs = 0
    }
    assert.equal((await finish(slow)).statusCode, 201)

    const garbage = await callback(sub)
    provider.garbageToken = '<html>Bad gateway</html>'
    try {
      assertError(await finish(garbage), 503, 'SERVICE_UNAVAILABLE')
    } finally {
      provider.garbageToken = undefined
    }
    assert.equal((await finish(garbage)).statusCode, 201)
  })

  test('the same flow finished twice at once: exactly one session', async () => {
    const sent = await callback(person())
    const answers = await Promise.all([finish(sent), finish(sent), finish(sent)])
    assert.deepEqual(answers.map((res) => res.statusCode).sort(), [201, 400, 400])
    for (const res of answers.filter((r) => r.statusCode === 400)) assertError(res, 400, 'INVALID_TOKEN')
  })

  test('an account with a second factor is asked for it after a provider\'s sign-in too', async () => {
    const sub = person()
    const first = await signIn(sub)
    const auth = { authorization: `Bearer ${first.token}` }
    const enrolled = await app.inject({ method: 'POST', url: `/v1/users/${first.user.id}/totp`, headers: auth })
    const secret = base32Decode(enrolled.json().secret)
    const step = Math.floor(Date.now() / 1000 / 30)
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${first.user.id}/totp`, headers: auth, payload: { code: totp(secret, { time: step * 30 }) } })).statusCode, 200)
    const asked = await finish(await callback(sub))
    assertError(asked, 401, 'MFA_REQUIRED')
    const answered = await finish({ challenge: asked.json().challenge, code: totp(secret, { time: (step + 1) * 30 }) })
    assert.equal(answered.statusCode, 201, answered.body)
    assert.equal(answered.json().user.id, first.user.id)
  })

  test('a provider that gives no address cannot make an account', async () => {
    const sub = `no-email-${Date.now()}`
    provider.accounts.set(sub, { sub, name: 'Nobody' })
    assertError(await finish(await callback(sub)), 400, 'VALIDATION_ERROR', ['provider'])
  })
})

describe('sign-in with REQUIRE_EMAIL_VERIFICATION', { timeout: 60_000 }, () => {
  test('an address the provider did not verify gets its account and mail, but no session until proved', async () => {
    const strict = await buildTestApp({ OIDC_PROVIDERS, REQUIRE_EMAIL_VERIFICATION: 'true' })
    try {
      const sub = person({ email_verified: false })
      const { authorizationUrl } = (await strict.app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })).json()
      const back = await provider.signIn(authorizationUrl, sub)
      const res = await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: back.searchParams.get('code'), state: back.searchParams.get('state') } })
      assertError(res, 403, 'EMAIL_NOT_VERIFIED')
      const users = await strict.app.db.selectFrom('users').select(['id', 'email_verified']).where('email', '=', provider.accounts.get(sub)!.email!).execute()
      assert.equal(users.length, 1)
      // A verified provider address signs straight in.
      const verified = person()
      const flow = (await strict.app.inject({ method: 'POST', url: '/v1/oidc-authorizations', payload: { provider: 'local', redirectUri: REDIRECT } })).json()
      const sent = await provider.signIn(flow.authorizationUrl, verified)
      const ok = await strict.app.inject({ method: 'POST', url: '/v1/sessions', payload: { provider: 'local', code: sent.searchParams.get('code'), state: sent.searchParams.get('state') } })
      assert.equal(ok.statusCode, 201, ok.body)
    } finally {
      await strict.close()
    }
  })
})
