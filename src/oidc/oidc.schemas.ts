import { Type } from '@sinclair/typebox'
import { IdString, named, Text, Timestamp } from '../http/schemas.js'
import { PROVIDER_ID } from './oidc.config.js'

/** A provider's id, as OIDC_PROVIDERS names it. */
export const ProviderId = Type.String({ pattern: PROVIDER_ID.source, maxLength: 32, description: 'An identity provider\'s id, as the service is configured with it (OIDC_PROVIDERS).', examples: ['gitlab'] })

export const OidcAuthorizationBody = named('OidcAuthorizationRequest', Type.Object({
  provider: ProviderId,
  redirectUri: Text({ maxLength: 2000, description: 'Your page the provider sends the person back to, exactly as the provider\'s configuration lists it.', examples: ['https://app.example/signed-in'] })
}, { additionalProperties: false, description: 'Begin a sign-in with an identity provider.', examples: [{ provider: 'gitlab', redirectUri: 'https://app.example/signed-in' }] }))

export const OidcAuthorization = named('OidcAuthorization', Type.Object({
  authorizationUrl: Type.String({ format: 'uri', description: 'Send the person here (a top-level navigation). The provider sends them back to `redirectUri` with `code` and `state`, which your page passes to POST /v1/sessions with `provider`.' }),
  expiresAt: Timestamp
}, { description: 'A sign-in begun: the provider\'s address to send the person to, good until `expiresAt` (10 minutes).', examples: [{ authorizationUrl: 'https://gitlab.com/oauth/authorize?client_id=2a0b&redirect_uri=https%3A%2F%2Fapp.example%2Fsigned-in&scope=openid+email+profile&response_type=code&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&state=af0ifjsldkj3YlvHx7yHVzNK7ro0fErR3o0pPn4kZ4o&nonce=n-0S6_WzA2Mj', expiresAt: '2026-11-27T16:40:00.000Z' }] }))

export const Identity = named('Identity', Type.Object({
  provider: Type.String({ description: 'The provider\'s id.' }),
  subject: Type.String({ description: 'The provider\'s stable id for the person (the ID token\'s `sub`).' }),
  email: Type.Union([Type.String(), Type.Null()], { description: 'The address the provider gave at the last sign-in, or null.' }),
  linkedAt: Timestamp
}, { description: 'An identity provider the account signs in with.', examples: [{ provider: 'gitlab', subject: '4815162342', email: 'ada@example.com', linkedAt: '2026-11-27T16:30:00.000Z' }] }))

export const ProviderParams = Type.Object({ id: IdString(), provider: ProviderId })
