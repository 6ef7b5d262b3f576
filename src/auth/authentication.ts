import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { looksLikeKey, wellFormedKey } from './api-key-format.js'
import { keyUsed } from './api-key-last-used.js'
import type { Access } from './scopes.js'
import { nowIso } from '../db/types.js'
import { wantsStream } from '../http/accepts-stream.js'
import { ApiError } from '../http/errors.js'
import { planOf } from '../pipeline/route-plan.js'
import type { Role } from '../users/user.table.js'
import { findKeyCaller, findKeyCallerById, findSessionCaller, type KeyCaller } from './credential.repository.js'
import { ticketCredential } from './stream-ticket.repository.js'
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

/** The credential a request presents, read from it once. */
export type Credential =
  | { readonly kind: 'none' }
  | { readonly kind: 'token' | 'key' | 'ticket', readonly text: string }

const NO_CREDENTIAL: Credential = Object.freeze({ kind: 'none' })

/**
 * Who is calling, and may they do this: every credential the service accepts is checked here.
 * A log-in token names a live session; an API key (`rk_…`, api-key-format.ts) a live key with
 * the scope the route asks; a stream ticket (`est_…`, stream-ticket.repository.ts), on a route
 * that takes tickets and for a stream only, the session or key that made it. The plugin gives
 * every request `user`, `sessionTokenHash` and `apiKey` (null until `authenticate` sets them)
 * and `credential` (read on first use); the routes that need a caller name `authenticate` as
 * their onRequest hook and say what they need in their schema's `security` (scopes.ts), which
 * their plan holds (pipeline/route-plan.ts), and authorize with the helpers below.
 */
export const authentication = fp(async (app) => {
  app.decorateRequest('user', null)
  app.decorateRequest('sessionTokenHash', null)
  app.decorateRequest('apiKey', null)
  app.decorateRequest('credential', null)
}, { name: 'authentication', dependencies: ['database', 'error-handler'] })

/**
 * The request's credential: on a route that takes stream tickets, the `ticket` query parameter of
 * a request asking for a stream (authenticated by the ticket alone, whatever its Authorization
 * header says); else the bearer credential, an API key by its prefix or a log-in token; else none.
 * Read once per request, by whichever asks first (the rate limit or authentication).
 */
export function credentialOf (request: FastifyRequest): Credential {
  if (request.credential !== null) return request.credential
  let credential = NO_CREDENTIAL
  const ticket = planOf(request).streamTickets ? (request.query as { ticket?: unknown }).ticket : undefined
  if (typeof ticket === 'string' && wantsStream(request)) {
    credential = { kind: 'ticket', text: ticket }
  } else {
    const header = request.headers.authorization
    const bearer = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined
    if (bearer !== undefined) credential = { kind: looksLikeKey(bearer) ? 'key' : 'token', text: bearer }
  }
  request.credential = credential
  return credential
}

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
  const credential = credentialOf(request)
  switch (credential.kind) {
    case 'none': throw unauthenticated()
    case 'token': return await authenticateSession(request, hashToken(credential.text))
    case 'key': return await authenticateKey(request, reply, credential.text, routeAccess(request))
    case 'ticket': return await authenticateTicket(request, credential.text)
  }
}

/**
 * Whether authentication counts this request in a rate-limit window (pipeline/rate-limit.ts), so the
 * rate limit's own step must not: exactly the requests made with an API key on a route that
 * authenticates its caller (`authenticateKey` counts them in the key's window once the key is
 * found, else in the address's). Every other request, a ticket's included, counts in its
 * address's window there: each request in exactly one window.
 */
export function countedByKey (request: FastifyRequest): boolean {
  return planOf(request).access !== undefined && credentialOf(request).kind === 'key'
}

/** Makes the caller the user of the live session with this token hash (401 when there is none). */
async function authenticateSession (request: FastifyRequest, tokenHash: string): Promise<void> {
  const found = await findSessionCaller(request.server.db, tokenHash, nowIso())
  if (found === undefined) throw unauthenticated()
  request.user = { id: found.id, email: found.email, name: found.name, role: found.role, sessionExpiresAt: found.expiresAt }
  request.sessionTokenHash = tokenHash
}

/**
 * Makes the caller the owner of a live key, if the key holds what the operation needs. A key of
 * the wrong shape or checksum is refused without a lookup. Its requests count in the key's own
 * rate-limit window (an unknown key's, in its address's).
 */
async function authenticateKey (request: FastifyRequest, reply: FastifyReply, key: string, access: Access): Promise<void> {
  const limiter = request.server.rateLimiter
  if (!wellFormedKey(key)) {
    limiter?.countAddress(request, reply)
    throw unauthenticated()
  }
  const found = await findKeyCaller(request.server.db, hashToken(key), nowIso())
  if (found === undefined) {
    limiter?.countAddress(request, reply)
    throw unauthenticated()
  }
  limiter?.countKey(request, reply, found.keyId)
  admitKey(request, found, access)
}

/**
 * Makes the caller the user a live stream ticket was made for, through the credential that made
 * it, still live (its session, or its key with the route's scope). Its request has counted in its
 * address's window.
 */
async function authenticateTicket (request: FastifyRequest, ticket: string): Promise<void> {
  const db = request.server.db
  const made = await ticketCredential(db, ticket, nowIso())
  if (made?.credential === undefined) throw unauthenticated()
  if ('sessionTokenHash' in made.credential) {
    await authenticateSession(request, made.credential.sessionTokenHash)
  } else {
    const found = await findKeyCallerById(db, made.credential.apiKeyId, nowIso())
    if (found === undefined) throw unauthenticated()
    admitKey(request, found, routeAccess(request))
  }
  if (currentUser(request).id !== made.userId) throw unauthenticated()
}

function admitKey (request: FastifyRequest, found: KeyCaller, access: Access): void {
  const scopes = found.scopes.split(' ')
  if (access === 'session' || !scopes.includes(access)) throw insufficientScope(access)
  request.user = { id: found.id, email: found.email, name: found.name, role: found.role, sessionExpiresAt: found.expiresAt }
  request.apiKey = { id: found.keyId, scopes }
  keyUsed(request.server.db, found.keyId, found.lastUsedAt)
}

/**
 * Whether the credential an authenticated request was made with is still good for its user, for
 * work that outlives the request (an event stream checks it every few seconds).
 */
export function stillValid (request: FastifyRequest): () => Promise<boolean> {
  const db = request.server.db
  const user = currentUser(request)
  const key = request.apiKey
  const tokenHash = request.sessionTokenHash ?? ''
  return key !== null
    ? async () => (await findKeyCallerById(db, key.id, nowIso()))?.id === user.id
    : async () => (await findSessionCaller(db, tokenHash, nowIso()))?.id === user.id
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
