import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import type { FastifyRequest } from 'fastify'
import type { Executor } from '../db/schema.js'
import { afterCommit, write } from '../db/write.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { nowIso, toIso } from '../db/types.js'
import { recordEvent } from '../events/event.repository.js'
import { authenticate, requireSelf } from '../auth/authentication.js'
import { ApiError } from '../http/errors.js'
import { sendTagged, sendWithTag } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LOCATION_HEADER, NoContent, NotModified, ref, success } from '../http/schemas.js'
import { deleteOtherSessions } from '../sessions/session.repository.js'
import { verifyCurrentPassword } from '../sessions/session.service.js'
import { hashPassword } from './password.js'
import { countSignup } from './signup-limit.js'
import { countPostsByAuthor, deleteUser, postIdsOfAuthor, findUserByEmail, findUserById, insertUser, lockUser, updatePasswordHash, updateUser } from './user.repository.js'
import { toUserPrivate, toUserPublic } from './user.representation.js'
import { PasswordChangeBody, Profile, UserCreateBody, UserPrivate, UserPublic, UserReplaceBody } from './user.schemas.js'


const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app

  /**
   * Every write of a user: the row locked, 404, then self only (admins included in nothing).
   * PUT and DELETE add the representation their tag (If-Match) is computed from.
   */
  const guardOf = (request: FastifyRequest, id: bigint) => ({
    lock: async (executor: Executor) => await lockUser(executor, dialect, id),
    notFound: 'USER_NOT_FOUND' as const,
    authorize: () => { requireSelf(request, id) }
  })

  app.post('/users', {
    schema: {
      tags: ['users'],
      operationId: 'createUser',
      summary: 'Create a user (sign up)',
      description: 'Sign-ups are limited per client address (429 past the limit).',
      security: [],
      body: ref(UserCreateBody),
      response: {
        201: success(UserPrivate, { description: 'The new user.', headers: { ...LOCATION_HEADER, ...ETAG_HEADER } }),
        ...errorResponses(...BODY_ERRORS, 'DUPLICATE_EMAIL')
      }
    }
  }, async (request, reply) => {
    const { email, password, name } = request.body
    void reply.headers(await countSignup(db, request.ip, app.config.signupsPerClientPerHour))
    // A cheap early answer for the common case; the unique index decides the race.
    if (await findUserByEmail(db, email) !== undefined) throw new ApiError('DUPLICATE_EMAIL')
    const passwordHash = await hashPassword(password)
    const shown = await write(db, async (trx) => {
      const user = toUserPrivate(await insertUser(trx, { email, name, passwordHash, role: 'USER', now: nowIso() }))
      await recordEvent(trx, { type: 'user.created', resourceId: user.id, audience: user.id, data: user })
      return user
    })
    return await sendWithTag(reply.code(201).header('location', `/v1/users/${shown.id}`), UserPrivate, shown)
  })

  app.get('/users/:id', {
    schema: {
      tags: ['users'],
      operationId: 'getUser',
      summary: 'Read a user',
      description: 'Sends a strong ETag; with a current If-None-Match the answer is 304.',
      security: [],
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: {
        200: success(UserPublic, { description: 'The user.', headers: ETAG_HEADER }),
        304: NotModified,
        ...errorResponses('VALIDATION_ERROR', 'USER_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const user = await findUserById(db, BigInt(request.params.id))
    if (user === undefined) throw new ApiError('USER_NOT_FOUND')
    return await sendTagged(request, reply, UserPublic, toUserPublic(user))
  })

  app.put('/users/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'replaceUser',
      summary: 'Replace your e-mail and name',
      description: 'Only the user may change the account. Honours If-Match.',
      security: requires('session'),
      params: IdParams,
      headers: IfMatchHeaders,
      body: ref(UserReplaceBody),
      response: { 200: success(UserPrivate, { description: 'The changed user.', headers: ETAG_HEADER }), ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'USER_NOT_FOUND', 'ACCESS_DENIED', 'PRECONDITION_FAILED', 'DUPLICATE_EMAIL') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      representation: { schema: UserPrivate, of: toUserPrivate },
      write: async (trx) => {
        const user = await updateUser(trx, id, { email: request.body.email, name: request.body.name, now: nowIso() })
        await recordEvent(trx, { type: 'user.updated', resourceId: id, audience: id, data: toUserPrivate(user) })
        return user
      }
    })
  })

  app.delete('/users/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'deleteUser',
      summary: 'Delete your account',
      description: 'Your sessions, posts and orders go with it; the e-mail address becomes free.',
      security: requires('session'),
      params: IdParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'USER_NOT_FOUND', 'ACCESS_DENIED', 'PRECONDITION_FAILED') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      representation: { schema: UserPrivate, of: toUserPrivate },
      write: async (trx) => {
        // The account's posts go with it: their readers learn it as they learn of any deleted post.
        for (const postId of await postIdsOfAuthor(trx, id)) await recordEvent(trx, { type: 'post.deleted', resourceId: postId })
        await deleteUser(trx, id)
        await recordEvent(trx, { type: 'user.deleted', resourceId: id, audience: id })
        afterCommit(trx, () => { credentialsRevoked(db, { userId: id }) })
      }
    })
  })

  app.get('/users/:id/profile', {
    schema: {
      tags: ['users'],
      operationId: 'getUserProfile',
      summary: 'Read a user\'s public profile',
      description: 'Sends a strong ETag; with a current If-None-Match the answer is 304.',
      security: [],
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: {
        200: success(Profile, { description: 'The profile.', headers: ETAG_HEADER }),
        304: NotModified,
        ...errorResponses('VALIDATION_ERROR', 'USER_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const user = await findUserById(db, id)
    if (user === undefined) throw new ApiError('USER_NOT_FOUND')
    const profile = { id: user.id, name: user.name, postCount: await countPostsByAuthor(db, id), createdAt: toIso(user.created_at) }
    return await sendTagged(request, reply, Profile, profile)
  })

  app.put('/users/:id/password', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'changePassword',
      summary: 'Change your password',
      description: 'Needs the current password: a wrong one is 400 VALIDATION_ERROR on the field `currentPassword` and counts as a failed log-in. Every other session of the user is revoked; this one stays.',
      security: requires('session'),
      params: IdParams,
      body: ref(PasswordChangeBody),
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'USER_NOT_FOUND', 'ACCESS_DENIED', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const { currentPassword, newPassword } = request.body
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      // Checking and hashing passwords is slow: done before the transaction, never under the lock.
      prepare: async (user) => {
        const { succeeded } = await verifyCurrentPassword(db, app.config, user.email, currentPassword, request.ip)
        return { succeeded, passwordHash: await hashPassword(newPassword) }
      },
      write: async (trx, _user, { succeeded, passwordHash }) => {
        await succeeded(trx)
        await updatePasswordHash(trx, id, passwordHash, nowIso())
        await deleteOtherSessions(trx, id, request.sessionTokenHash ?? '')
        afterCommit(trx, () => { credentialsRevoked(db, { userId: id, keepSessionTokenHash: request.sessionTokenHash ?? '' }) })
      }
    })
  })
}

export const userRoutes = fp(routes, { name: 'users', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
