import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actingAs, actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import type { FastifyRequest } from 'fastify'
import type { Executor } from '../db/schema.js'
import { afterCommit, write } from '../db/write.js'
import { credentialsRevoked } from '../auth/revocations.js'
import { nowIso, toIso } from '../db/types.js'
import { recordEvent } from '../events/event.repository.js'
import { authenticate, requireAdmin, requireSelf } from '../auth/authentication.js'
import { toAvatar } from '../files/image.representation.js'
import { ApiError } from '../http/errors.js'
import { etagOf, sendTagged } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NoContent, NotModified, ref, success } from '../http/schemas.js'
import { deleteOtherSessions } from '../sessions/session.repository.js'
import { verifyCurrentPassword } from '../sessions/session.service.js'
import { hashPassword } from './password.js'
import { countAddressProbe, countSignup } from './signup-limit.js'
import { requireRecentAuthentication } from '../auth/recent-authentication.js'
import { clientOf } from '../http/client-address.js'
import { countPostsByAuthor, deleteUser, listUsers, emailTakenByOther, postIdsOfAuthor, findUserByEmail, findUserById, insertUser, lockUser, updatePasswordHash, updateUser } from './user.repository.js'
import { toManagedUser, toUserAccount, toUserPrivate, toUserPublic } from './user.representation.js'
import { ManagedUser, PasswordChangeBody, Profile, UserAccount, UserCreateBody, UserPrivate, UserPublic, UserReplaceBody } from './user.schemas.js'
import type { UserRow } from './user.table.js'
import { Type } from '@sinclair/typebox'
import { answerPage } from '../http/paging.js'
import { sortedPage } from '../http/sorted-paging.js'
import { userCursorKey, UserListQuery, userListing, userQueryRules } from './user.listing.js'
import { hasLiveToken, voidTokens } from '../accounts/account-token.repository.js'
import { afterPasswordReplaced, queueAccountMail } from '../accounts/account.service.js'
import { emailKey } from '../http/email.js'


/**
 * What a PUT's `email` asks of the account's address: nothing (`same`: the current address, in
 * any case, which may change its spelling and drops a proposal), to keep the proposal waiting
 * (`pending`: the address already proposed, its link still good), or a `new` proposal.
 */
function addressChange (user: UserRow, email: string): { kind: 'same' } | { kind: 'pending', pending: string } | { kind: 'new' } {
  if (emailKey(email) === emailKey(user.email)) return { kind: 'same' }
  if (user.pending_email !== null && emailKey(email) === emailKey(user.pending_email)) return { kind: 'pending', pending: email }
  return { kind: 'new' }
}

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
    void reply.headers(await countSignup(db, dialect, clientOf(request), app.config.signupsPerClientPerHour))
    // A cheap early answer for the common case; the unique index decides the race.
    if (await findUserByEmail(db, email) !== undefined) throw new ApiError('DUPLICATE_EMAIL')
    const passwordHash = await hashPassword(password)
    const row = await write(db, async (trx) => {
      const user = await insertUser(trx, { email, name, passwordHash, role: 'USER', now: nowIso() })
      await recordEvent(trx, { type: 'user.created', resourceId: user.id, audience: user.id, data: toUserAccount(user), actor: actingAs(user.id) })
      await queueAccountMail(trx, app.config, { kind: 'verify-email', userId: user.id, address: user.email })
      return user
    })
    // The body is the account as sign-up shows it; the tag is that of the account as PUT shows
    // it, so it can be sent as If-Match with the first change.
    void reply.header('etag', etagOf(reply, UserAccount, toUserAccount(row)))
    return await reply.code(201).header('location', `/v1/users/${row.id}`).send(toUserPrivate(row))
  })

  app.get('/users', {
    onRequest: authenticate,
    config: { queryRules: userQueryRules },
    schema: {
      tags: ['users'],
      operationId: 'listUsers',
      summary: 'List accounts (administrators)',
      description: 'Administrators only (anyone else 403 ACCESS_DENIED; an API key 403 INSUFFICIENT_SCOPE). Filters combine with AND: `q` (a part of the address or the name, in any case, 3 characters or more), `role`, `emailVerified`. ' +
        '`sort` is `-createdAt` (newest first, the default) or `createdAt`. Keyset paging: `limit` 1 to 100 (default 20); when more follow, ' +
        '`Link: <…>; rel="next"` gives the next page, whose cursor is valid only with the same sort and filters (else 400 CURSOR_MISMATCH).',
      security: requires('session'),
      querystring: UserListQuery,
      response: {
        200: success(Type.Array(ref(ManagedUser), { maxItems: 100 }), { description: 'A page of accounts.', headers: LINK_HEADER, example: ManagedUser.examples }),
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'CURSOR_MISMATCH', 'ACCESS_DENIED')
      }
    }
  }, async (request, reply) => {
    requireAdmin(request)
    const listing = userListing(request.query)
    return answerPage(request, reply, await sortedPage(request.query, listing.fingerprint, userCursorKey, (rows, position) => listUsers(db, dialect, listing, rows, position), toManagedUser))
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
      description: 'Only the user may change the account. Honours If-Match. A new `email` does not replace the address at once: it becomes `pendingEmail`, a verification link goes to it, and it becomes `email` when that link is used (the old address is then told). A new `email` needs a recent session (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication); the link counts against the new address\'s mail limits (429). The address already pending gets a new link only when its last one was spent or expired (an address waiting for its proof is mailed only at its account\'s asking). The current `email` (in any case) clears `pendingEmail`. An address another account has is 409 DUPLICATE_EMAIL, and counts against the sign-up limit of the client address (429 past it).',
      security: requires('session'),
      params: IdParams,
      headers: IfMatchHeaders,
      body: ref(UserReplaceBody),
      response: { 200: success(UserAccount, { description: 'The changed user.', headers: ETAG_HEADER }), ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'USER_NOT_FOUND', 'ACCESS_DENIED', 'REAUTHENTICATION_REQUIRED', 'PRECONDITION_FAILED', 'DUPLICATE_EMAIL', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const { email, name } = request.body
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      representation: { schema: UserAccount, of: toUserAccount },
      // A move to a new address is what a stolen session would do first: it needs a recent
      // proof of who is asking, and is counted as a probe of the address (taken or not).
      prepare: async (current) => {
        if (addressChange(current, email).kind !== 'new') return undefined
        await requireRecentAuthentication(request)
        return await countAddressProbe(db, dialect, clientOf(request), app.config.signupsPerClientPerHour)
      },
      write: async (trx, current, probe) => {
        const change = addressChange(current, email)
        if (change.kind === 'new') {
          // The account's own change made meanwhile can turn this into a new address too.
          if (probe === undefined) await requireRecentAuthentication(request)
          if (await emailTakenByOther(trx, email, id)) throw new ApiError('DUPLICATE_EMAIL')
          await probe?.takeBack(trx)
        }
        const user = await updateUser(trx, id, {
          email: change.kind === 'same' ? email : current.email,
          pendingEmail: change.kind === 'same' ? null : change.kind === 'new' ? email : change.pending,
          name,
          now: nowIso()
        })
        // A proposal dropped or replaced: its link no longer proves anything.
        if (current.pending_email !== null && change.kind !== 'pending') await voidTokens(trx, id, 'verify-email', current.pending_email)
        // A new address gets its link; so does the one already proposed when its link was spent
        // or expired: only the account that proposed an address may ask for its link again.
        if (change.kind === 'new' || (change.kind === 'pending' && !await hasLiveToken(trx, id, 'verify-email', current.pending_email!))) {
          await queueAccountMail(trx, app.config, { kind: 'verify-email', userId: id, address: email })
        }
        await recordEvent(trx, { type: 'user.updated', resourceId: id, audience: id, data: toUserAccount(user), actor: actorOf(request) })
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
      description: 'Your sessions, posts and orders go with it; the e-mail address becomes free. Needs a recent session (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication).',
      security: requires('session'),
      params: IdParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'USER_NOT_FOUND', 'ACCESS_DENIED', 'REAUTHENTICATION_REQUIRED', 'PRECONDITION_FAILED') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      representation: { schema: UserAccount, of: toUserAccount },
      prepare: async () => { await requireRecentAuthentication(request) },
      write: async (trx) => {
        // The account's posts go with it: their readers learn it as they learn of any deleted post.
        for (const postId of await postIdsOfAuthor(trx, id)) await recordEvent(trx, { type: 'post.deleted', resourceId: postId, actor: actorOf(request) })
        await deleteUser(trx, id)
        await recordEvent(trx, { type: 'user.deleted', resourceId: id, audience: id, actor: actorOf(request) })
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
    const profile = { id: user.id, name: user.name, postCount: await countPostsByAuthor(db, id), createdAt: toIso(user.created_at), avatar: toAvatar(user.avatar, app.config.publicUrl) }
    return await sendTagged(request, reply, Profile, profile)
  })

  app.put('/users/:id/password', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'changePassword',
      summary: 'Change your password',
      description: 'Needs the current password: a wrong one is 400 VALIDATION_ERROR on the field `currentPassword` and counts as a failed log-in. Every other session of the user is revoked; this one stays. Reset tokens mailed earlier are void, and a notice goes to the address.',
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
        const { succeeded } = await verifyCurrentPassword(db, app.config, user.email, currentPassword, clientOf(request))
        return { succeeded, passwordHash: await hashPassword(newPassword) }
      },
      write: async (trx, user, { succeeded, passwordHash }) => {
        await succeeded(trx)
        await updatePasswordHash(trx, id, passwordHash, nowIso())
        await afterPasswordReplaced(trx, app.config, user, 'change')
        await deleteOtherSessions(trx, id, request.sessionTokenHash ?? '')
        afterCommit(trx, () => { credentialsRevoked(db, { userId: id, keepSessionTokenHash: request.sessionTokenHash ?? '' }) })
      }
    })
  })
}

export const userRoutes = fp(routes, { name: 'users', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
