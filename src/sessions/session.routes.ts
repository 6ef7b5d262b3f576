import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { authenticate, currentUser, unauthenticated } from '../auth/authentication.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, LOCATION_HEADER, NoContent, ref, success } from '../http/schemas.js'
import { afterCommit, write } from '../db/write.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { deleteSession } from './session.repository.js'
import { CurrentSession, LoginBody, Session } from './session.schemas.js'
import { currentSessionRepresentation, logIn, sessionRepresentation } from './session.service.js'
import { finishSignIn } from '../oidc/oidc.service.js'
import { completeChallenge } from '../mfa/mfa.service.js'
import { prepareDummyHash } from '../users/password.js'
import { findUserById } from '../users/user.repository.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  // The dummy hash for unknown e-mails is made now, so the first unknown e-mail after start-up
  // does not take the time of a hash on top of a verification.
  void prepareDummyHash()

  app.post('/sessions', {
    schema: {
      tags: ['sessions'],
      operationId: 'createSession',
      summary: 'Log in',
      description: 'Exchanges an e-mail and password, or what an identity provider sent the person back with (`provider`, `code`, `state`, after POST /v1/oidc-authorizations), for a bearer token, shown only in this response. Failed passwords are limited per e-mail and client address, per client address and per account (429 past a limit). With REQUIRE_EMAIL_VERIFICATION, the right password (or a provider\'s sign-in) for an unverified address is 403 EMAIL_NOT_VERIFIED. A provider that cannot be reached is 503 with Retry-After: the same request may be sent again. For an account with a second factor, a right password (or provider sign-in) is 401 MFA_REQUIRED with a `challenge`: send `{challenge, code}` within 5 minutes; every refusal of that code is 401 INVALID_MFA_CODE.',
      security: [],
      body: ref(LoginBody),
      response: {
        201: success(Session, { description: 'Logged in. The session is then addressed as /v1/sessions/current by whoever holds the token.', headers: LOCATION_HEADER }),
        ...errorResponses(...BODY_ERRORS, 'INVALID_TOKEN', 'INVALID_CREDENTIALS', 'MFA_REQUIRED', 'INVALID_MFA_CODE', 'EMAIL_NOT_VERIFIED', 'DUPLICATE_EMAIL', 'TOO_MANY_REQUESTS')
      }
    }
  }, async (request, reply) => {
    const body = request.body
    if ('challenge' in body) {
      const { user, token, expiresAt, headers } = await completeChallenge(app.db, app.config, app.secretBox, body, request.ip)
      return await reply.code(201).headers(headers).header('location', '/v1/sessions/current').send(sessionRepresentation(token, expiresAt, user))
    }
    if ('provider' in body) {
      const { user, token, expiresAt } = await finishSignIn(app.db, app.config, app.identityProviders, request.log, body)
      return await reply.code(201).header('location', '/v1/sessions/current').send(sessionRepresentation(token, expiresAt, user))
    }
    const { session, headers } = await logIn(app.db, app.config, body.email, body.password, request.ip)
    // The created session is addressed, by whoever holds its token, as /v1/sessions/current.
    return await reply.code(201).headers(headers).header('location', '/v1/sessions/current').send(session)
  })

  app.get('/sessions/current', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      operationId: 'getCurrentSession',
      summary: 'The current session',
      description: 'Who the token belongs to and when it expires. The token itself is never shown again.',
      security: requires('session'),
      response: { 200: success(CurrentSession, { description: 'The session.' }), ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR') }
    }
  }, async (request) => {
    const caller = currentUser(request)
    // Only a log-in token reaches here (its `security`), and a session always expires.
    if (caller.sessionExpiresAt === null) throw unauthenticated()
    // The state of the address is read here, not on every authenticated request.
    const user = await findUserById(app.db, caller.id)
    if (user === undefined) throw unauthenticated()
    return currentSessionRepresentation(caller.sessionExpiresAt, user)
  })

  app.delete('/sessions/current', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      operationId: 'deleteCurrentSession',
      summary: 'Log out',
      description: 'Revokes the token at once.',
      security: requires('session'),
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR') }
    }
  }, async (request, reply) => {
    const tokenHash = request.sessionTokenHash ?? ''
    await write(app.db, async (trx) => {
      await deleteSession(trx, tokenHash)
      afterCommit(trx, () => { credentialsRevoked(app.db, { sessionTokenHash: tokenHash }) })
    })
    return await reply.code(204).send(null)
  })
}

export const sessionRoutes = fp(routes, { name: 'sessions', dependencies: [...FEATURE_PREREQUISITES, 'identity-providers', 'secret-box'], encapsulate: true })
