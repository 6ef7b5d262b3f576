import type { Config } from '../config/config.js'
import type { Db, Executor } from '../db/schema.js'
import { toIso } from '../db/types.js'
import { ApiError } from '../http/errors.js'
import { findUserByEmail } from '../users/user.repository.js'
import type { UserRow } from '../users/user.table.js'
import { hasPassword, verifyAgainstDummy, verifyPassword } from '../users/password.js'
import { beginSignInAttempt, type LoginAttempt } from '../limits/login-throttle.js'
import { deleteExpiredSessions, insertSession } from './session.repository.js'
import { newToken } from '../auth/token.js'

function invalidCredentials (headers: Record<string, string>): ApiError {
  return new ApiError('INVALID_CREDENTIALS', { headers })
}

export interface VerifiedCredentials {
  user: UserRow
  /** The RateLimit header fields for the answer. */
  headers: Record<string, string>
  /** The log-in limits' attempt, to settle in the unit of work that acts on the log-in. */
  attempt: LoginAttempt
  /** Takes the attempt off the failure count; call it in the transaction that acts on the log-in. */
  succeeded: (trx: Executor) => Promise<void>
}

/**
 * Checks an e-mail and password under the log-in limits. A wrong e-mail and a wrong password
 * give the same error, message and (through the dummy hash) the same time.
 */
export async function verifyCredentials (db: Db, config: Config, email: string, password: string, client: string): Promise<VerifiedCredentials> {
  const user = await findUserByEmail(db, email)
  // Counted as a failure from here on, unless the password turns out right.
  const attempt = await beginSignInAttempt(db, config, { email, client, userId: user?.id })
  // An account without a password (made by a provider) takes the time of a wrong one.
  const ok = user === undefined || !hasPassword(user.password_hash) ? await verifyAgainstDummy(password) : await verifyPassword(user.password_hash, password)
  if (user === undefined || !ok) throw invalidCredentials(attempt.headers(true))
  return { user, headers: attempt.headers(false), attempt, succeeded: attempt.succeeded }
}

/**
 * The current password of a logged-in user who changes it. A wrong one counts as a failed
 * log-in for that e-mail, under the same limits, but is answered as 400 on the field
 * `currentPassword`: the caller is authenticated, and a 401 would make client libraries drop
 * the session.
 */
export async function verifyCurrentPassword (db: Db, config: Config, email: string, password: string, client: string): Promise<VerifiedCredentials> {
  try {
    return await verifyCredentials(db, config, email, password, client)
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'INVALID_CREDENTIALS') throw error
    throw new ApiError('VALIDATION_ERROR', { errors: [{ field: 'currentPassword', message: 'is not your current password' }], headers: error.headers })
  }
}

type SessionUserRow = Pick<UserRow, 'id' | 'email' | 'name' | 'role' | 'email_verified' | 'pending_email'>

/** A session as GET /v1/sessions/current shows it: never the token, which is sent once, at log-in. */
export function currentSessionRepresentation (expiresAt: Date | string, user: SessionUserRow) {
  return {
    tokenType: 'Bearer' as const,
    expiresAt: toIso(expiresAt),
    user: { id: user.id, email: user.email, name: user.name, role: user.role, emailVerified: Number(user.email_verified) === 1, pendingEmail: user.pending_email }
  }
}

/** The answer to a log-in: the only response that carries the token. */
export function sessionRepresentation (token: string, expiresAt: Date | string, user: SessionUserRow) {
  return { token, ...currentSessionRepresentation(expiresAt, user) }
}

/**
 * Makes a session for the account, in the caller's transaction: every way of logging in ends
 * here. Returns the token, which only the log-in's answer shows.
 */
export async function startSession (trx: Executor, config: Config, userId: bigint): Promise<{ token: string, expiresAt: string }> {
  const { token, hash } = newToken()
  const now = Date.now()
  const expiresAt = new Date(now + config.sessionTtlSeconds * 1000).toISOString()
  await insertSession(trx, userId, hash, new Date(now).toISOString(), expiresAt)
  // Expired sessions are useless; each log-in clears the user's own, so the table stays small.
  await deleteExpiredSessions(trx, userId, new Date(now).toISOString())
  return { token, expiresAt }
}
