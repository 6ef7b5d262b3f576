import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { looksLikeKey, wellFormedKey } from '../api-keys/key-format.js'
import { findKeyUser, findKeyUserById, type KeyUser } from '../api-keys/api-key.repository.js'
import { keyUsed } from '../api-keys/last-used.js'
import type { Access } from '../api-keys/scopes.js'
import { nowIso } from '../db/types.js'
import { wantsStream } from '../http/accepts-stream.js'
import { ApiError } from '../http/errors.js'
import { planOf } from '../http/route-plan.js'
import type { Role } from '../users/user.table.js'
import { findSessionUser } from './session.repository.js'
import { hashToken } from './token.js'

export interface CurrentUser {
  id: bigint
  email: string
  name: string
  role: Role
  /** When the credential stops being good: the session's expiry, or the key's (null: a key that never expires). */
  sessionExpiresAt: Date | string | null
}

/** The API key a request was made with (null for a log-in token). */
export interface CallerKey {
  id: bigint
  scopes: readonly string[]
}

// The scheme is case-insensitive (RFC 9110 section 11.1): "bearer TOKEN" is the same credential.
const BEARER = /^Bearer ([A-Za-z0-9_-]{20,200})$/i

export function unauthenticated (): ApiError {
  return new ApiError('AUTHENTICATION_REQUIRED', { headers: { 'www-authenticate': 'Bearer realm="api"' } })
}

/** 403 for a key without the scope an operation needs (RFC 6750); for one that needs a log-in token, no scope will do. */
export function insufficientScope (access: Access): ApiError {
  return access === 'session'
    ? new ApiError('INSUFFICIENT_SCOPE', { message: 'This operation needs a log-in token; an API key may not do it.', headers: { 'www-authenticate': 'Bearer realm="api", error="insufficient_scope", error_description="a log-in token is required"' } })
    : new ApiError('INSUFFICIENT_SCOPE', { message: `This API key lacks the scope ${access}.`, headers: { 'www-authenticate': `Bearer realm="api", error="insufficient_scope", scope="${access}"` } })
}

/** The bearer credential of a request, if it has one of the right shape. */
export function bearerOf (request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined
}

/**
 * Authentication is the sessions feature's: a bearer credential is a log-in token naming a live
 * session, or an API key (api-keys/) naming a live key. The plugin gives every request `user`,
 * `sessionTokenHash` and `apiKey` (null until `authenticate` sets them); the routes that need a
 * caller name `authenticate` as their onRequest hook and say what they need in their schema's
 * `security` (api-keys/scopes.ts), and authorize with the helpers below.
 */
export const authentication = fp(async (app) => {
  app.decorateRequest('user', null)
  app.decorateRequest('sessionTokenHash', null)
  app.decorateRequest('apiKey', null)
}, { name: 'authentication', dependencies: ['database', 'error-handler'] })

/** What the request's route asks of its caller (its plan, from its `security`): a scope, else a log-in token. */
export function routeAccess (request: FastifyRequest): Access {
  return (planOf(request).access as Access | undefined) ?? 'session'
}

/**
 * onRequest hook for operations that need a caller: it runs before the body is read, so an
 * anonymous write is 401 whatever it sends (authentication comes before the request's shape),
 * and a key without the operation's scope is 403 INSUFFICIENT_SCOPE just as early.
 */
export async function authenticate (request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const credential = bearerOf(request)
  if (credential === undefined) throw unauthenticated()
  if (looksLikeKey(credential)) await authenticateKey(request, reply, credential, routeAccess(request))
  else await authenticateSession(request, hashToken(credential))
}

/**
 * The stream ticket a request opens its stream with: the `ticket` query parameter, on a route
 * that takes tickets, of a request asking for a stream. Such a request is authenticated by the
 * ticket alone, whatever its Authorization header says.
 */
export function streamTicketOf (request: FastifyRequest): string | undefined {
  if (!planOf(request).streamTickets) return undefined
  const { ticket } = request.query as { ticket?: unknown }
  return typeof ticket === 'string' && wantsStream(request) ? ticket : undefined
}

/**
 * Whether authentication counts this request in a rate-limit window (http/rate-limit.ts), so the
 * rate limit's own hook must not: exactly the requests `authenticateKey` is given with their
 * reply, those whose credential is an API key in the Authorization header on a route that
 * authenticates its caller (it counts them in the key's window once the key is found, else in
 * the address's). Every other request, a ticket's included, counts in its address's window
 * there: each request in exactly one window.
 */
export function countedByKey (request: FastifyRequest): boolean {
  const credential = bearerOf(request)
  // A route whose plan names what it asks of its caller authenticates it (its onRequest hook).
  return credential !== undefined && looksLikeKey(credential) && planOf(request).access !== undefined && streamTicketOf(request) === undefined
}

/** Makes the caller the user of the live session with this token hash (401 when there is none). */
export async function authenticateSession (request: FastifyRequest, tokenHash: string): Promise<void> {
  const found = await findSessionUser(request.server.db, tokenHash, nowIso())
  if (found === undefined) throw unauthenticated()
  request.user = { id: found.id, email: found.email, name: found.name, role: found.role, sessionExpiresAt: found.expiresAt }
  request.sessionTokenHash = tokenHash
}

/**
 * Makes the caller the owner of a live key, if the key holds what the operation needs. A key of
 * the wrong shape or checksum is refused without a lookup. Its requests count in the key's own
 * rate-limit window (an unknown key's, in its address's).
 */
export async function authenticateKey (request: FastifyRequest, reply: FastifyReply | undefined, key: string, access: Access): Promise<void> {
  const limiter = request.server.rateLimiter
  if (!wellFormedKey(key)) {
    limiter?.countAddress(request, reply)
    throw unauthenticated()
  }
  const found = await findKeyUser(request.server.db, hashToken(key), nowIso())
  if (found === undefined) {
    limiter?.countAddress(request, reply)
    throw unauthenticated()
  }
  admitKey(request, found, access, reply)
}

/** Makes the caller the owner of a live key named by its id (a stream ticket made with a key), if it holds what is needed. */
export async function authenticateKeyById (request: FastifyRequest, keyId: bigint, access: Access): Promise<void> {
  const found = await findKeyUserById(request.server.db, keyId, nowIso())
  if (found === undefined) throw unauthenticated()
  admitKey(request, found, access)
}

/** With `reply`, the request counts in the key's rate-limit window (a ticket's request has counted in its address's already). */
function admitKey (request: FastifyRequest, found: KeyUser, access: Access, reply?: FastifyReply): void {
  if (reply !== undefined) request.server.rateLimiter?.countKey(request, reply, found.keyId)
  const scopes = found.scopes.split(' ')
  if (access === 'session' || !scopes.includes(access)) throw insufficientScope(access)
  request.user = { id: found.id, email: found.email, name: found.name, role: found.role, sessionExpiresAt: found.expiresAt }
  request.apiKey = { id: found.keyId, scopes }
  keyUsed(request.server.db, found.keyId, found.lastUsedAt)
}

/** The caller of an authenticated route (the hook guarantees there is one). */
export function currentUser (request: FastifyRequest): CurrentUser {
  if (request.user === null) throw unauthenticated()
  return request.user
}

export function isAdmin (user: CurrentUser): boolean {
  return user.role === 'ADMIN'
}

export function requireAdmin (request: FastifyRequest): CurrentUser {
  const user = currentUser(request)
  if (!isAdmin(user)) throw new ApiError('ACCESS_DENIED')
  return user
}

/** Self only (admins included in nothing): the `{id}` of the path must be the caller. */
export function requireSelf (request: FastifyRequest, id: bigint): CurrentUser {
  const user = currentUser(request)
  if (user.id !== id) throw new ApiError('ACCESS_DENIED')
  return user
}

export function requireSelfOrAdmin (request: FastifyRequest, id: bigint): CurrentUser {
  const user = currentUser(request)
  if (user.id !== id && !isAdmin(user)) throw new ApiError('ACCESS_DENIED')
  return user
}
