import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { authenticate, currentUser } from './authentication.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, NoContent } from '../http/schemas.js'
import { deleteSession } from './session.repository.js'
import { LoginBody, Session } from './session.schemas.js'
import { logIn, sessionRepresentation } from './session.service.js'
import { prepareDummyHash } from '../users/password.js'

const TOKEN_FROM_HEADER = /^Bearer (.+)$/i

const routes: FastifyPluginAsyncTypebox = async (app) => {
  // The dummy hash for unknown e-mails is made now, so the first unknown e-mail after start-up
  // does not take the time of a hash on top of a verification.
  void prepareDummyHash()

  app.post('/sessions', {
    schema: {
      tags: ['sessions'],
      summary: 'Log in',
      description: 'Exchanges an e-mail and password for a bearer token. Failed attempts are limited per e-mail and per client address (429 past the limit).',
      body: LoginBody,
      response: { 201: Session, ...errorResponses(...BODY_ERRORS, 'INVALID_CREDENTIALS', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    const { session, headers } = await logIn(app.db, app.config, request.body.email, request.body.password, request.ip)
    // The created session is addressed, by whoever holds its token, as /v1/sessions/current.
    return await reply.code(201).headers(headers).header('location', '/v1/sessions/current').send(session)
  })

  app.get('/sessions/current', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      summary: 'The current session',
      security: [{ bearerAuth: [] }],
      response: { 200: Session, ...errorResponses(...AUTH_ERRORS) }
    }
  }, async (request) => {
    const user = currentUser(request)
    const token = TOKEN_FROM_HEADER.exec(request.headers.authorization ?? '')?.[1] ?? ''
    return sessionRepresentation(token, user.sessionExpiresAt, user)
  })

  app.delete('/sessions/current', {
    onRequest: authenticate,
    schema: {
      tags: ['sessions'],
      summary: 'Log out',
      description: 'Revokes the token at once.',
      security: [{ bearerAuth: [] }],
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS) }
    }
  }, async (request, reply) => {
    await deleteSession(app.db, request.sessionTokenHash ?? '')
    return await reply.code(204).send(null)
  })
}

export const sessionRoutes = fp(routes, { name: 'sessions', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
