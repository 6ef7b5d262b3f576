import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { authenticate, currentUser, unauthenticated } from '../auth/authentication.js'
import { AUTH_ERRORS, errorResponses, NoContent, success } from '../http/schemas.js'
import { afterCommit, write } from '../db/write.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { deleteSession } from './session.repository.js'
import { CurrentSession } from './session.schemas.js'
import { currentSessionRepresentation } from './session.service.js'
import { findUserById } from '../users/user.repository.js'

// The current session: who holds it, and logging out. Signing in (making a session) is the
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
}

export const sessionRoutes = fp(routes, { name: 'sessions', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
