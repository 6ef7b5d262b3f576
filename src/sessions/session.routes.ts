import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { authenticate, currentUser, requireSelfOrAdmin, unauthenticated } from '../auth/authentication.js'
import { AUTH_ERRORS, errorResponses, IdParams, NoContent, success } from '../http/schemas.js'
import { ApiError } from '../http/errors.js'
import { afterCommit, write } from '../db/write.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { deleteSession, deleteUserSessions } from './session.repository.js'
import { CurrentSession } from './session.schemas.js'
import { currentSessionRepresentation } from './session.service.js'
import { findUserById } from '../users/user.repository.js'

// The current session: who holds it, and logging out; a user's sessions all ended at once. Signing in (making a session) is the
// sign-in room's (sign-in/sign-in.routes.ts).

const routes: FastifyPluginAsyncTypebox = async (app) => {
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

  app.delete('/users/:id/sessions', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      operationId: 'deleteUserSessions',
      summary: 'Sign a user out everywhere (the user or an administrator)',
      description: 'Every session of the user ends at once, the caller\'s own included when it is theirs, and the event streams opened with them end too. API keys stay (revoke them with DELETE /v1/api-keys/{id}). The user or an administrator (anyone else 403 ACCESS_DENIED); a log-in token, never an API key.',
      security: requires('session'),
      params: IdParams,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'USER_NOT_FOUND', 'ACCESS_DENIED') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    if (await findUserById(app.db, id) === undefined) throw new ApiError('USER_NOT_FOUND')
    requireSelfOrAdmin(request, id)
    await write(app.db, async (trx) => {
      await deleteUserSessions(trx, id)
      afterCommit(trx, () => { credentialsRevoked(app.db, { userId: id }) })
    })
    return await reply.code(204).send(null)
  })
}

export const sessionRoutes = fp(routes, { name: 'sessions', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
