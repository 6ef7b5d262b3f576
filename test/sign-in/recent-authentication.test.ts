import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { hashToken } from '../../src/auth/token.js'
import { write } from '../../src/db/write.js'
import { assertError, buildTestApp, createUser, tokenOf, uniqueEmail, type TestUser } from '../helper.js'
import { codeOf, makeKey, turnOnFactor } from '../accounts/fixtures.js'

// Recent authentication: a session alone (a stolen token, a borrowed laptop) cannot take the
// account from its owner for good. The changes that would (a new address, a second factor, a
// provider unlinked, a key made, the account deleted) need the holder to have proved who they
// are within REAUTHENTICATION_SECONDS: by logging in, or by re-authenticating. Here a session is
// made old by moving its proof an hour back (REAUTHENTICATION_SECONDS is 600), never by waiting.

const { app, close } = await buildTestApp({ SECRET_KEY: '0f'.repeat(32), LOGIN_FAILURES_PER_EMAIL: '3', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' })
after(close)

async function ageSession (user: TestUser, seconds = 3600): Promise<void> {
  await write(app.db, async (trx) => {
    await trx.updateTable('sessions').set({ authenticated_at: new Date(Date.now() - seconds * 1000).toISOString() }).where('token_hash', '=', hashToken(user.token)).execute()
  })
}
const reauthenticate = async (user: TestUser, payload: object, headers: Record<string, string> = user.auth) =>
  await app.inject({ method: 'POST', url: '/v1/sessions/current/reauthentication', headers, payload })
const me = async (user: TestUser) => (await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: user.auth })).json().user

/** Every guarded change, as the old session tries it, with what must be unchanged after its refusal. */
function guarded (user: TestUser) {
  return [
    { name: 'a new address', send: async () => await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: uniqueEmail('thief'), name: user.name } }) },
    { name: 'enrolling a factor', send: async () => await app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: user.auth }) },
    { name: 'unlinking a provider', send: async () => await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}/identities/local`, headers: user.auth }) },
    { name: 'making an API key', send: async () => await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'thief', scopes: ['orders:read'] } }) },
    { name: 'a webhook endpoint', send: async () => await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url: 'https://thief.example/hook' } }) },
    { name: 'deleting the account', send: async () => await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth }) }
  ]
}

describe('recent authentication', { timeout: 120_000 }, () => {
  test('an old session is refused every change that moves the account, and nothing changes', async () => {
    const user = await createUser(app)
    await write(app.db, async (trx) => {
      await trx.insertInto('user_identities').values({ user_id: BigInt(user.id), provider: 'local', subject: `s-${user.id}`, email: user.email, linked_at: new Date().toISOString() }).execute()
    })
    await ageSession(user)
    for (const change of guarded(user)) assertError(await change.send(), 403, 'REAUTHENTICATION_REQUIRED')
    assert.deepEqual({ ...await me(user) }, { id: user.id, email: user.email, name: user.name, role: 'USER', emailVerified: false, pendingEmail: null })
    assert.equal((await app.db.selectFrom('totp_factors').select('id').where('user_id', '=', BigInt(user.id)).execute()).length, 0)
    assert.equal((await app.db.selectFrom('user_identities').select('id').where('user_id', '=', BigInt(user.id)).execute()).length, 1)
    assert.equal((await app.db.selectFrom('api_keys').select('id').where('user_id', '=', BigInt(user.id)).execute()).length, 0)
    assert.equal((await app.db.selectFrom('webhook_endpoints').select('id').where('user_id', '=', BigInt(user.id)).execute()).length, 0)
    // What moves nothing needs no proof: the name, and the address as it is.
    const renamed = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email.toUpperCase(), name: 'Renamed' } })
    assert.equal(renamed.statusCode, 200, renamed.body)
  })

  test('a webhook endpoint is a lasting copy of the account\'s events: a new one, or a new URL, needs a recent session; a key that may manage them was the proof', async () => {
    const user = await createUser(app)
    const key = await makeKey(app, user, ['webhooks:read', 'webhooks:write'])
    const made = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url: 'http://127.0.0.1:9/a' } })
    assert.equal(made.statusCode, 201, made.body)
    const id = made.json().id as number
    await ageSession(user)
    const patch = async (headers: Record<string, string>, payload: object) => await app.inject({ method: 'PATCH', url: `/v1/webhook-endpoints/${id}`, headers, payload })
    assertError(await patch(user.auth, { url: 'http://127.0.0.1:9/b' }), 403, 'REAUTHENTICATION_REQUIRED')
    // The same URL, or the rest of the endpoint, moves nothing.
    assert.equal((await patch(user.auth, { url: 'http://127.0.0.1:9/a', description: 'renamed' })).statusCode, 200)
    assert.equal((await patch(key, { url: 'http://127.0.0.1:9/c' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: key, payload: { url: 'http://127.0.0.1:9/d' } })).statusCode, 201)
  })

  test('recent means within REAUTHENTICATION_SECONDS (600) of its own proof: each session counts for itself', async () => {
    const user = await createUser(app)
    const other: TestUser = { ...user, token: await tokenOf(app, user.email, user.password) }
    other.auth = { authorization: `Bearer ${other.token}` }
    await ageSession(user, 540)
    assert.equal((await makeKeyAnswer(user)).statusCode, 201)
    await ageSession(user, 660)
    assertError(await makeKeyAnswer(user), 403, 'REAUTHENTICATION_REQUIRED')
    // Another session of the same account, logged in just now, is recent.
    assert.equal((await makeKeyAnswer(other)).statusCode, 201)
  })

  test('activating a factor enrolled while the session was recent needs it recent still', async () => {
    const user = await createUser(app)
    const enrolled = await app.inject({ method: 'POST', url: `/v1/users/${user.id}/totp`, headers: user.auth })
    assert.equal(enrolled.statusCode, 201)
    await ageSession(user)
    assertError(await app.inject({ method: 'PUT', url: `/v1/users/${user.id}/totp`, headers: user.auth, payload: { code: '123456' } }), 403, 'REAUTHENTICATION_REQUIRED')
  })

  test('the password makes the session recent again; then each change goes through', async () => {
    const user = await createUser(app)
    await ageSession(user)
    const answered = await reauthenticate(user, { password: user.password })
    assert.equal(answered.statusCode, 204, answered.body)
    assert.equal(answered.body, '')
    assert.equal((await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'now', scopes: ['orders:read'] } })).statusCode, 201)
    const moved = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: uniqueEmail('moved'), name: user.name } })
    assert.equal(moved.statusCode, 200, moved.body)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth })).statusCode, 204)
  })

  test('a code of the second factor does too, once; a used code is refused as at log-in', async () => {
    const user = await createUser(app)
    const secret = await turnOnFactor(app, user)
    await ageSession(user)
    const code = codeOf(secret)
    assert.equal((await reauthenticate(user, { code })).statusCode, 204)
    await ageSession(user)
    assertError(await reauthenticate(user, { code }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await makeKeyAnswer(user), 403, 'REAUTHENTICATION_REQUIRED')
  })

  test('wrong proofs: 400 on the field, counted as failed log-ins (429 past the limit)', async () => {
    const user = await createUser(app)
    await ageSession(user)
    assertError(await reauthenticate(user, { password: 'not the password' }), 400, 'VALIDATION_ERROR', ['password'])
    // No factor: a code proves nothing.
    assertError(await reauthenticate(user, { code: '123456' }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await reauthenticate(user, { password: 'still not it' }), 400, 'VALIDATION_ERROR', ['password'])
    // LOGIN_FAILURES_PER_EMAIL is 3 here: the fourth is refused before any check, the right password too.
    const refused = await reauthenticate(user, { password: user.password })
    assertError(refused, 429, 'TOO_MANY_REQUESTS')
    assert.ok(Number(refused.headers['retry-after']) >= 1)
    assertError(await makeKeyAnswer(user), 403, 'REAUTHENTICATION_REQUIRED')
  })

  test('bodies and credentials: the shapes of a proof, a log-in token only', async () => {
    const user = await createUser(app)
    assertError(await reauthenticate(user, {}), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await reauthenticate(user, { password: '' }), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await reauthenticate(user, { password: 7 }), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await reauthenticate(user, { password: 'x'.repeat(1001) }), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await reauthenticate(user, { password: user.password, code: '123456' }), 400, 'VALIDATION_ERROR', ['code'])
    assertError(await reauthenticate(user, { code: '123456', extra: true }), 400, 'VALIDATION_ERROR', ['extra'])
    assertError(await reauthenticate(user, { password: user.password }, {}), 401, 'AUTHENTICATION_REQUIRED')
    const key = await makeKey(app, user, ['orders:read'])
    assertError(await reauthenticate(user, { password: user.password }, key), 403, 'INSUFFICIENT_SCOPE')
  })
})

async function makeKeyAnswer (user: TestUser) {
  return await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'k', scopes: ['orders:read'] } })
}
