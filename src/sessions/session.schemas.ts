import { Type, type TString } from '@sinclair/typebox'
import { Id, named, ref, Text, Timestamp } from '../http/schemas.js'
import { ProviderId } from '../oidc/oidc.schemas.js'

/**
 * A password offered for checking (log-in, current password): non-blank, since no account can
 * have a blank one. Any other wrong password is 401, whatever its length, so that the answer
 * says nothing about the password rules; the upper bound only caps the work a request causes.
 */
export function OfferedPassword (description = 'The account\'s password.'): TString {
  return Text({ maxLength: 1000, description })
}

export const PasswordLoginBody = named('PasswordLoginRequest', Type.Object({
  // Not format-checked: an address that cannot belong to any account is simply not found.
  email: Text({ maxLength: 254, description: 'The e-mail address the account was created with.' }),
  password: OfferedPassword()
}, { additionalProperties: false, description: 'A log-in with e-mail address and password.', examples: [{ email: 'ada@example.com', password: 'correct horse battery' }] }))

export const ProviderLoginBody = named('ProviderLoginRequest', Type.Object({
  provider: ProviderId,
  code: Text({ maxLength: 2048, description: 'The `code` the provider sent the person back with.' }),
  state: Text({ maxLength: 256, description: 'The `state` the provider sent the person back with: it names the sign-in begun with POST /v1/oidc-authorizations.' })
}, { additionalProperties: false, description: 'A sign-in with an identity provider: what it sent the person back to your page with.', examples: [{ provider: 'gitlab', code: 'SplxlOBeZQQYbYS6WxSbIA', state: 'af0ifjsldkj3YlvHx7yHVzNK7ro0fErR3o0pPn4kZ4o' }] }))

/** A code as a person types it: six digits from the app, or a recovery code (spaces and dashes allowed). */
export const MfaCode = Text({ maxLength: 32, description: 'The six-digit code the authenticator app shows now, or one of the recovery codes.', examples: ['492039'] })

export const ChallengeLoginBody = named('ChallengeLoginRequest', Type.Object({
  challenge: Text({ maxLength: 256, description: 'The `challenge` of the MFA_REQUIRED answer to the log-in.' }),
  code: MfaCode
}, { additionalProperties: false, description: 'The second step of a log-in to an account with a second factor.', examples: [{ challenge: 'mQ2m1d3rX6yJpVw8nT4uLhE7cA5sGfR2kPzMq3Zb0o9', code: '492039' }] }))

export const LoginBody = named('LoginRequest', Type.Union([ref(PasswordLoginBody), ref(ProviderLoginBody), ref(ChallengeLoginBody)], {
  description: 'Credentials for a log-in: an e-mail address and password, what an identity provider sent the person back with, or the second step of a log-in with a second factor (the challenge and a code). A body is checked as the form whose members it has.'
}))

export const PasswordReauthenticationBody = named('PasswordReauthenticationRequest', Type.Object({
  password: OfferedPassword()
}, { additionalProperties: false, description: 'A re-authentication with the account\'s password.', examples: [{ password: 'correct horse battery' }] }))

export const CodeReauthenticationBody = named('CodeReauthenticationRequest', Type.Object({
  code: MfaCode
}, { additionalProperties: false, description: 'A re-authentication with a code of the account\'s second factor (or a recovery code).', examples: [{ code: '492039' }] }))

export const ReauthenticationBody = named('ReauthenticationRequest', Type.Union([ref(PasswordReauthenticationBody), ref(CodeReauthenticationBody)], {
  description: 'A proof that the holder of the session is the account\'s owner: the password, or a code of the second factor. A body is checked as the form whose members it has.'
}))

export const SessionUser = named('SessionUser', Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('USER'), Type.Literal('ADMIN')], { description: 'ADMIN may manage products and see and ship every order.' }),
  emailVerified: Type.Boolean({ description: 'Whether a mailed link proved `email`.' }),
  pendingEmail: Type.Union([Type.String(), Type.Null()], { description: 'A new address waiting for its proof (PUT /v1/users/{id}), or null.' })
}, { description: 'The logged-in user.' }))

const sessionExample = { tokenType: 'Bearer', expiresAt: '2026-11-22T16:30:00.000Z', user: { id: 42, email: 'ada@example.com', name: 'Ada', role: 'USER', emailVerified: true, pendingEmail: null } }

/** The current session, as GET /v1/sessions/current shows it: never the token. */
export const CurrentSession = named('CurrentSession', Type.Object({
  tokenType: Type.Literal('Bearer'),
  expiresAt: Timestamp,
  user: ref(SessionUser)
}, { description: 'The session the request\'s token belongs to. The token itself is sent once, at log-in, never again.', examples: [sessionExample] }))

/** The answer to a log-in: the only response that carries the token. */
export const Session = named('Session', Type.Object({
  token: Type.String({ description: 'Opaque bearer token (256 random bits). Send it as `Authorization: Bearer TOKEN`. Shown only here, once.' }),
  tokenType: Type.Literal('Bearer'),
  expiresAt: Timestamp,
  user: ref(SessionUser)
}, { description: 'A new session (log-in).', examples: [{ token: 'q3Zb0o9bK2m1d3rX6yJpVw8nT4uLhE7cA5sGfR2kPzM', ...sessionExample }] }))
