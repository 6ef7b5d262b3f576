import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { nowIso } from '../db/types.js'
import { ApiError } from '../http/errors.js'
import type { Role } from '../users/user.table.js'
import { findSessionUser } from './session.repository.js'
import { hashToken } from './token.js'

export interface CurrentUser {
  id: bigint
  email: string
  name: string
  role: Role
  sessionExpiresAt: Date | string
}

// The scheme is case-insensitive (RFC 9110 section 11.1): "bearer TOKEN" is the same credential.
const BEARER = /^Bearer ([A-Za-z0-9_-]{20,200})$/i

export function unauthenticated (): ApiError {
  return new ApiError('AUTHENTICATION_REQUIRED', { headers: { 'www-authenticate': 'Bearer realm="api"' } })
}

/**
 * Authentication is the sessions feature's: a bearer token names a live session. The plugin
 * gives every request `user` and `sessionTokenHash` (null until `authenticate` sets them); the
 * routes that need a caller name `authenticate` as their onRequest hook, and authorize with the
 * helpers below.
 */
export const authentication = fp(async (app) => {
  app.decorateRequest('user', null)
  app.decorateRequest('sessionTokenHash', null)
}, { name: 'authentication', dependencies: ['database', 'error-handler'] })

/**
 * onRequest hook for operations that need a logged-in caller: it runs before the body is read,
 * so an anonymous write is 401 whatever it sends (authentication comes before the request's shape).
 */
export async function authenticate (request: FastifyRequest): Promise<void> {
  const header = request.headers.authorization
  const match = typeof header === 'string' ? BEARER.exec(header) : null
  if (match === null) throw unauthenticated()
  await authenticateSession(request, hashToken(match[1]!))
}

/** Makes the caller the user of the live session with this token hash (401 when there is none). */
export async function authenticateSession (request: FastifyRequest, tokenHash: string): Promise<void> {
  const found = await findSessionUser(request.server.db, tokenHash, nowIso())
  if (found === undefined) throw unauthenticated()
  request.user = { id: found.id, email: found.email, name: found.name, role: found.role, sessionExpiresAt: found.expiresAt }
  request.sessionTokenHash = tokenHash
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
