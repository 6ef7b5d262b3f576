import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import * as client from 'openid-client'
import { startTestProvider, type ProviderClient, type TestProvider } from './oidc-provider.js'

// The test provider against the relying-party library the service uses (openid-client): the
// whole sign-in works, and each way a provider can fail shows as the error recorded here, which
// is what the service's own handling has to map to its answers.
//
// What openid-client throws (v6.9.0):
// - the provider's OAuth error answer (a code used twice): ResponseBodyError, .error
//   'invalid_grant', .status 400, .code 'OAUTH_RESPONSE_BODY_ERROR';
// - an ID token with a wrong claim (aud, nonce): ClientError, .code
//   'OAUTH_JWT_CLAIM_COMPARISON_FAILED', .cause an OperationProcessingError naming the claim;
// - the provider down: the TypeError 'fetch failed' of fetch itself, not wrapped, .cause.code
//   ECONNREFUSED on a new connection or UND_ERR_SOCKET ('other side closed') on one kept alive
//   from before;
// - no answer within the configuration's timeout: ClientError 'operation timed out', .code
//   'OAUTH_TIMEOUT', .cause a DOMException named TimeoutError;
// - garbage (200 text/html) from the token endpoint: ClientError, .code
//   'OAUTH_RESPONSE_IS_NOT_JSON', .cause the Response;
// - an authorization response without `iss`: ClientError, .code 'OAUTH_INVALID_RESPONSE'; the
//   provider sends `iss` (RFC 9207) and says so in its discovery document
//   (authorization_response_iss_parameter_supported), so openid-client then requires it;
// - an error sent back to the client (error=...): AuthorizationResponseError, .error the code.

const CLIENT: ProviderClient = {
  clientId: 'resource-api',
  clientSecret: 'a-client-secret-long-enough-for-the-tests-0123456789',
  // Never called: the test provider's signIn stops at the redirect back to the client.
  redirectUris: ['http://127.0.0.1:9/v1/auth/oidc/callback']
}
const REDIRECT_URI = CLIENT.redirectUris[0]!
const ALICE = { sub: 'alice', email: 'alice@example.com', email_verified: true, name: 'Alice' }

const discover = async (provider: TestProvider, timeout?: number): Promise<client.Configuration> =>
  // No clientAuthentication: with a secret openid-client then uses client_secret_post, the
  // test provider's default method. allowInsecureRequests: the issuer is http on loopback.
  await client.discovery(new URL(provider.issuer), CLIENT.clientId, CLIENT.clientSecret, undefined, {
    execute: [client.allowInsecureRequests],
    ...(timeout !== undefined && { timeout })
  })

/** A relying party's authorization request, signed in as `sub`: the callback URL and the checks to redeem it. */
async function authorize (provider: TestProvider, config: client.Configuration, sub = ALICE.sub) {
  const pkceCodeVerifier = client.randomPKCECodeVerifier()
  const expectedState = client.randomState()
  const expectedNonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: 'S256',
    state: expectedState,
    nonce: expectedNonce
  })
  const callback = await provider.signIn(url, sub)
  return { callback, checks: { pkceCodeVerifier, expectedState, expectedNonce, idTokenExpected: true } }
}

const rejectsWith = async (promise: Promise<unknown>, check: (error: unknown) => void): Promise<void> => {
  await assert.rejects(promise, (error) => { check(error); return true })
}

const assertClientError = (error: unknown, code: string): client.ClientError => {
  assert.ok(error instanceof client.ClientError, `a ClientError, not ${String(error)}`)
  assert.equal(error.code, code)
  return error
}

const assertNetworkError = (error: unknown): void => {
  assert.ok(error instanceof TypeError, `a TypeError, not ${String(error)}`)
  assert.equal(error.message, 'fetch failed')
  const cause = error.cause as { code?: string } | undefined
  assert.ok(['ECONNREFUSED', 'UND_ERR_SOCKET', 'ECONNRESET'].includes(cause?.code ?? ''), `a connection error, not ${String(cause?.code)}`)
}

describe('the test OpenID provider with openid-client', () => {
  let provider: TestProvider
  let config: client.Configuration

  before(async () => {
    provider = await startTestProvider({ clients: [CLIENT], accounts: [ALICE] })
    config = await discover(provider)
  })
  after(async () => { await provider.close() })

  test('a whole sign-in: discovery, log-in and consent, the code exchange and the ID token', { timeout: 20_000 }, async () => {
    assert.equal(config.serverMetadata().issuer, provider.issuer)
    assert.match(provider.issuer, /^http:\/\/127\.0\.0\.1:\d+$/)
    const { callback, checks } = await authorize(provider, config)
    assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT_URI)
    assert.equal(callback.searchParams.get('state'), checks.expectedState)
    assert.equal(callback.searchParams.get('iss'), provider.issuer)
    const tokens = await client.authorizationCodeGrant(config, callback, checks)
    const claims = tokens.claims()
    assert.equal(claims?.sub, ALICE.sub)
    assert.equal(claims?.email, ALICE.email)
    assert.equal(claims?.email_verified, true)
    assert.equal(claims?.name, ALICE.name)
    assert.equal(claims?.iss, provider.issuer)
    assert.equal(claims?.aud, CLIENT.clientId)
  })

  test('an account added later signs in with its own claims', { timeout: 20_000 }, async () => {
    provider.accounts.set('bob', { sub: 'bob', email: 'bob@example.com', email_verified: false })
    const { callback, checks } = await authorize(provider, config, 'bob')
    const claims = (await client.authorizationCodeGrant(config, callback, checks)).claims()
    assert.equal(claims?.sub, 'bob')
    assert.equal(claims?.email, 'bob@example.com')
    assert.equal(claims?.email_verified, false)
    assert.equal(claims?.name, undefined)
  })

  test('an ID token for another audience is refused', { timeout: 20_000 }, async (t) => {
    const { callback, checks } = await authorize(provider, config)
    provider.tamperIdToken = (claims) => ({ ...claims, aud: 'another-client' })
    t.after(() => { provider.tamperIdToken = undefined })
    await rejectsWith(client.authorizationCodeGrant(config, callback, checks), (error) => {
      const clientError = assertClientError(error, 'OAUTH_JWT_CLAIM_COMPARISON_FAILED')
      assert.match((clientError.cause as Error).message, /"aud"/)
    })
  })

  test('an ID token with another nonce is refused', { timeout: 20_000 }, async (t) => {
    const { callback, checks } = await authorize(provider, config)
    provider.tamperIdToken = (claims) => ({ ...claims, nonce: client.randomNonce() })
    t.after(() => { provider.tamperIdToken = undefined })
    await rejectsWith(client.authorizationCodeGrant(config, callback, checks), (error) => {
      const clientError = assertClientError(error, 'OAUTH_JWT_CLAIM_COMPARISON_FAILED')
      assert.match((clientError.cause as Error).message, /"nonce"/)
    })
  })

  test('a code used twice is the provider\'s invalid_grant', { timeout: 20_000 }, async () => {
    const { callback, checks } = await authorize(provider, config)
    await client.authorizationCodeGrant(config, callback, checks)
    await rejectsWith(client.authorizationCodeGrant(config, callback, checks), (error) => {
      assert.ok(error instanceof client.ResponseBodyError, `a ResponseBodyError, not ${String(error)}`)
      assert.equal(error.error, 'invalid_grant')
      assert.equal(error.status, 400)
      assert.equal(error.code, 'OAUTH_RESPONSE_BODY_ERROR')
    })
  })

  test('while the provider is down every request fails as fetch does; back up, the same code works', { timeout: 20_000 }, async (t) => {
    const { callback, checks } = await authorize(provider, config)
    await provider.stop()
    t.after(async () => { await provider.start() })
    await rejectsWith(client.authorizationCodeGrant(config, callback, checks), assertNetworkError)
    await rejectsWith(discover(provider), assertNetworkError)
    await provider.start()
    const tokens = await client.authorizationCodeGrant(config, callback, checks)
    assert.equal(tokens.claims()?.sub, ALICE.sub)
    assert.equal((await discover(provider)).serverMetadata().issuer, provider.issuer)
  })

  test('a provider slower than the timeout (seconds, from discovery) is a timeout', { timeout: 20_000 }, async (t) => {
    const impatient = await discover(provider, 1)
    assert.equal(impatient.timeout, 1)
    const { callback, checks } = await authorize(provider, impatient)
    provider.delayMs = 2000
    t.after(() => { provider.delayMs = 0 })
    const started = Date.now()
    await rejectsWith(client.authorizationCodeGrant(impatient, callback, checks), (error) => {
      const clientError = assertClientError(error, 'OAUTH_TIMEOUT')
      assert.equal((clientError.cause as DOMException).name, 'TimeoutError')
    })
    assert.ok(Date.now() - started < 1900, 'gave up at the time limit, not when the answer came')
    await rejectsWith(discover(provider, 1), (error) => { assertClientError(error, 'OAUTH_TIMEOUT') })
  })

  test('garbage from the token endpoint is refused; the code is still good afterwards', { timeout: 20_000 }, async (t) => {
    const { callback, checks } = await authorize(provider, config)
    provider.garbageToken = '<html><body>Service Unavailable</body></html>'
    t.after(() => { provider.garbageToken = undefined })
    await rejectsWith(client.authorizationCodeGrant(config, callback, checks), (error) => {
      const clientError = assertClientError(error, 'OAUTH_RESPONSE_IS_NOT_JSON')
      assert.equal((clientError.cause as Response).status, 200)
    })
    provider.garbageToken = undefined
    assert.equal((await client.authorizationCodeGrant(config, callback, checks)).claims()?.sub, ALICE.sub)
  })

  test('the provider sends iss and openid-client then requires it', { timeout: 20_000 }, async () => {
    assert.equal(config.serverMetadata().authorization_response_iss_parameter_supported, true)
    const { callback, checks } = await authorize(provider, config)
    const withoutIss = new URL(callback)
    withoutIss.searchParams.delete('iss')
    await rejectsWith(client.authorizationCodeGrant(config, withoutIss, checks), (error) => {
      assertClientError(error, 'OAUTH_INVALID_RESPONSE')
    })
  })

  test('the provider requires PKCE, and sends its refusal back to the client', { timeout: 20_000 }, async () => {
    const expectedState = client.randomState()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', state: expectedState })
    const callback = await provider.signIn(url, ALICE.sub)
    assert.equal(callback.searchParams.get('error'), 'invalid_request')
    await rejectsWith(client.authorizationCodeGrant(config, callback, { expectedState }), (error) => {
      assert.ok(error instanceof client.AuthorizationResponseError, `an AuthorizationResponseError, not ${String(error)}`)
      assert.equal(error.error, 'invalid_request')
    })
  })

  test('signIn throws with the provider\'s error page, and for an unknown account', { timeout: 20_000 }, async () => {
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:9/not-registered',
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256'
    })
    await assert.rejects(provider.signIn(url, ALICE.sub), /answered 400 .*\n.*redirect_uri/)
    await assert.rejects(provider.signIn(url, 'nobody'), /no account 'nobody'/)
  })
})
