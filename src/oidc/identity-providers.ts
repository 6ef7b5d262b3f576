import type { FastifyBaseLogger } from 'fastify'
import type * as OpenidClient from 'openid-client'
import type { OidcConfig, OidcProvider } from './oidc.config.js'

// The relying party: every protocol step is openid-client's (discovery, PKCE S256, the code
// exchange, and the ID token's signature, issuer, audience, expiry and nonce), never ours.
// This file keeps each provider's discovered configuration and says what a provider's failure
// means to the client: the provider refused this sign-in (start again), or could not be used
// just now (try again later).

/**
 * openid-client (with oauth4webapi and jose), imported at the first use of a provider rather than
 * at start: a service with no provider configured, and every process until its first provider
 * sign-in, does without it (docs/PERFORMANCE.md, Memory). Node's module registry keeps it after that.
 */
export async function openidClient (): Promise<typeof OpenidClient> {
  return await import('openid-client')
}

/** Discovery is reused this long, then done again on the next use (keys rotate through the JWKS, which openid-client refetches itself). */
const DISCOVERY_TTL_MS = 60 * 60 * 1000
/** Scopes asked for: the subject, the address and whether the provider verified it, a name. */
export const SCOPES = 'openid email profile'

/** The provider could not be used (down, slow, broken answers, or misconfigured): 503, try again later. */
export class ProviderUnavailable extends Error {
  readonly provider: string

  constructor (provider: string, cause: unknown) {
    super(`identity provider "${provider}" could not be used`, { cause })
    this.name = 'ProviderUnavailable'
    this.provider = provider
  }
}

/** The provider refused this code, or answered with an ID token that failed a check: the flow is over. */
export class ProviderRefused extends Error {
  readonly provider: string

  constructor (provider: string, cause: unknown) {
    super(`identity provider "${provider}" refused the sign-in`, { cause })
    this.name = 'ProviderRefused'
    this.provider = provider
  }
}

// oauth4webapi's codes for an answer that is not what this sign-in needs: an ID token whose
// audience, nonce, issuer or time is wrong, whose signature fails, or a malformed token answer.
const REFUSED_CODES = new Set(['OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED', 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED', 'OAUTH_KEY_SELECTION_FAILED', 'OAUTH_INVALID_RESPONSE'])
// The token endpoint's OAuth errors that are about the code (used, expired, from another flow,
// another client's): the client starts again. Every other error (invalid_client, server_error,
// temporarily_unavailable) is the provider's or the operator's, not the person's.
const REFUSED_GRANT_ERRORS = new Set(['invalid_grant'])

function isRefusal (client: typeof OpenidClient, error: unknown): boolean {
  if (error instanceof client.ResponseBodyError) return REFUSED_GRANT_ERRORS.has(error.error)
  if (error instanceof client.ClientError) return error.code !== undefined && REFUSED_CODES.has(error.code)
  return false
}

export interface ProviderClaims {
  subject: string
  email: string | undefined
  emailVerified: boolean
  name: string | undefined
}

export class IdentityProviders {
  readonly #providers: Map<string, OidcProvider>
  readonly #timeoutSeconds: number
  readonly #log: FastifyBaseLogger
  readonly #discovered = new Map<string, { at: number, configuration: Promise<OpenidClient.Configuration> }>()

  constructor (config: OidcConfig, log: FastifyBaseLogger) {
    this.#providers = new Map(config.providers.map((p) => [p.id, p]))
    this.#timeoutSeconds = config.timeoutSeconds
    this.#log = log
  }

  get (id: string): OidcProvider | undefined {
    return this.#providers.get(id)
  }

  /**
   * The provider's discovered configuration: fetched on first use, reused for an hour; a failed
   * discovery is not kept, so the next sign-in tries again.
   */
  async configuration (provider: OidcProvider): Promise<OpenidClient.Configuration> {
    const cached = this.#discovered.get(provider.id)
    if (cached !== undefined && Date.now() - cached.at < DISCOVERY_TTL_MS) return await cached.configuration
    const configuration = this.#discover(provider)
    const entry = { at: Date.now(), configuration }
    this.#discovered.set(provider.id, entry)
    configuration.catch(() => { if (this.#discovered.get(provider.id) === entry) this.#discovered.delete(provider.id) })
    return await configuration
  }

  async #discover (provider: OidcProvider): Promise<OpenidClient.Configuration> {
    const insecure = new URL(provider.issuer).protocol === 'http:'
    const client = await openidClient()
    try {
      // The secret goes with the code to the token endpoint (client_secret_basic or _post, as
      // the provider's metadata allows); it is never logged.
      return await client.discovery(new URL(provider.issuer), provider.clientId, provider.clientSecret, undefined, {
        timeout: this.#timeoutSeconds,
        // http is allowed only for an issuer on a loopback address (checked in oidc.config.ts).
        execute: insecure ? [client.allowInsecureRequests] : []
      })
    } catch (error) {
      this.#log.warn({ provider: provider.id, err: error }, 'identity provider discovery failed')
      throw new ProviderUnavailable(provider.id, error)
    }
  }

  /** Where to send the person: the provider's authorization endpoint with this flow's PKCE challenge, state and nonce. */
  async authorizationUrl (provider: OidcProvider, flow: { redirectUri: string, codeVerifier: string, state: string, nonce: string }): Promise<URL> {
    const configuration = await this.configuration(provider)
    const client = await openidClient()
    return client.buildAuthorizationUrl(configuration, {
      redirect_uri: flow.redirectUri,
      scope: SCOPES,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce
    })
  }

  /**
   * Exchanges the code of a flow for a verified ID token and returns its claims. Throws
   * ProviderRefused (the flow is over) or ProviderUnavailable (it may be tried again).
   */
  async exchange (provider: OidcProvider, flow: { redirectUri: string, codeVerifier: string, nonce: string }, code: string, state: string): Promise<ProviderClaims> {
    const configuration = await this.configuration(provider)
    const client = await openidClient()
    // The address the provider sent the person back to, as openid-client checks it. The client's
    // page passes on `code` and `state`; the issuer (RFC 9207's `iss`) is the one this flow was
    // begun with, since the flow, kept here, already binds the provider.
    const callback = new URL(flow.redirectUri)
    callback.searchParams.set('code', code)
    callback.searchParams.set('state', state)
    if (configuration.serverMetadata().authorization_response_iss_parameter_supported === true) {
      callback.searchParams.set('iss', configuration.serverMetadata().issuer)
    }
    try {
      const tokens = await client.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: state,
        expectedNonce: flow.nonce,
        idTokenExpected: true
      })
      const claims = tokens.claims()
      if (claims === undefined) throw new ProviderRefused(provider.id, new Error('no ID token'))
      return {
        subject: claims.sub,
        email: typeof claims.email === 'string' ? claims.email : undefined,
        // Only a literal true: a provider that does not say has not verified it.
        emailVerified: claims.email_verified === true,
        name: typeof claims.name === 'string' ? claims.name : undefined
      }
    } catch (error) {
      if (error instanceof ProviderRefused) throw error
      if (isRefusal(client, error)) {
        this.#log.warn({ provider: provider.id, err: error }, 'identity provider refused a sign-in')
        throw new ProviderRefused(provider.id, error)
      }
      this.#log.warn({ provider: provider.id, err: error }, 'identity provider could not be used')
      throw new ProviderUnavailable(provider.id, error)
    }
  }
}
