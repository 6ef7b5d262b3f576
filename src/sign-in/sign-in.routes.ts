import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { authenticate, currentUser, unauthenticated } from '../auth/authentication.js'
import { requires } from '../auth/scopes.js'
import { clientOf } from '../http/client-address.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, LOCATION_HEADER, NoContent, ref, success } from '../http/schemas.js'
import { LoginBody, ReauthenticationBody, Session } from '../sessions/session.schemas.js'
import { sessionRepresentation } from '../sessions/session.service.js'
import { prepareDummyHash } from '../users/password.js'
import { findUserById } from '../users/user.repository.js'
import { completeChallenge } from './challenge-sign-in.js'
import { logIn } from './password-sign-in.js'
import { providerSignIn } from './provider-sign-in.js'
import { reauthenticate } from './reauthentication.js'

// Signing in (docs/accounts.md): POST /v1/sessions with a password, a provider's answer or a
// second factor's code; every way ends in the same admission (admission.ts). And proving it
// again for a session that is no longer recent.

const routes: FastifyPluginAsyncTypebox = async (app) => {
  // The dummy hash for unknown e-mails is made now, so the first unknown e-mail after start-up
  // does not take the time of a hash on top of a verification.
  void prepareDummyHash()

  app.post('/sessions', {
    schema: {
      tags: ['sessions'],
      operationId: 'createSession',
      summary: 'Log in',
      description: 'Exchanges an e-mail and password, or what an identity provider sent the person back with (`provider`, `code`, `state`, after POST /v1/oidc-authorizations), for a bearer token, shown only in this response. Failed passwords are limited per e-mail and client address, per client address and per account (429 past a limit). With REQUIRE_EMAIL_VERIFICATION, the right password (or a provider\'s sign-in) for an unverified address is 403 EMAIL_NOT_VERIFIED. A provider that cannot be reached is 503 with Retry-After: the same request may be sent again. For an account with a second factor, a right password (or provider sign-in) is 401 MFA_REQUIRED with a `challenge`: send `{challenge, code}` within 5 minutes; every refusal of that code is 401 INVALID_MFA_CODE, and a challenge takes five guesses in all.',
      security: [],
      body: ref(LoginBody),
      response: {
        201: success(Session, { description: 'Logged in. The session is then addressed as /v1/sessions/current by whoever holds the token.', headers: LOCATION_HEADER }),
        ...errorResponses(...BODY_ERRORS, 'INVALID_TOKEN', 'INVALID_CREDENTIALS', 'MFA_REQUIRED', 'INVALID_MFA_CODE', 'EMAIL_NOT_VERIFIED', 'DUPLICATE_EMAIL', 'TOO_MANY_REQUESTS')
      }
    }
  }, async (request, reply) => {
    const body = request.body
    // The created session is addressed, by whoever holds its token, as /v1/sessions/current.
    const created = async (session: Static<typeof Session>, headers: Record<string, string> = {}) =>
      await reply.code(201).headers(headers).header('location', '/v1/sessions/current').send(session)
    if ('challenge' in body) {
      const { user, token, expiresAt, headers } = await completeChallenge(app.db, app.config, app.secretBox, body, clientOf(request))
      return await created(sessionRepresentation(token, expiresAt, user), headers)
    }
    if ('provider' in body) return await created(await providerSignIn(app.db, app.config, app.identityProviders, request.log, body))
    const { session, headers } = await logIn(app.db, app.config, body.email, body.password, clientOf(request))
    return await created(session, headers)
  })

  app.post('/sessions/current/reauthentication', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      operationId: 'reauthenticate',
      summary: 'Prove who you are again',
      description: 'Makes the current session recent again (as at its log-in) for REAUTHENTICATION_SECONDS (10 minutes by default), with the account\'s password or a code of its second factor (or a recovery code). Changing the e-mail address, turning a second factor on, unlinking a provider, creating an API key and deleting the account need a recent session (403 REAUTHENTICATION_REQUIRED). A wrong password or code is 400 VALIDATION_ERROR on its field and counts as a failed log-in (429 past the log-in limits). An account with neither a password nor a second factor signs in with its provider again instead. Needs a log-in token.',
      security: requires('session'),
      body: ref(ReauthenticationBody),
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    const caller = currentUser(request)
    const user = await findUserById(app.db, caller.id)
    if (user === undefined || request.sessionTokenHash === null) throw unauthenticated()
    const headers = await reauthenticate(app.db, app.config, app.secretBox, { tokenHash: request.sessionTokenHash, user, client: clientOf(request) }, request.body)
    return await reply.code(204).headers(headers).send(null)
  })
}

export const signInRoutes = fp(routes, { name: 'sign-in', dependencies: [...FEATURE_PREREQUISITES, 'identity-providers', 'secret-box'], encapsulate: true })
