import type { Config } from '../config/config.js'
import type { Db, Executor } from '../db/schema.js'
import { toIso } from '../db/types.js'
import { write } from '../db/write.js'
import { emailKey } from '../http/email.js'
import { ApiError } from '../http/errors.js'
import { findUserByEmail } from '../users/user.repository.js'
import type { UserRow } from '../users/user.table.js'
import { hasPassword, verifyAgainstDummy, verifyPassword } from '../users/password.js'
import { beginLoginAttempt } from './login-throttle.js'
import { deleteExpiredSessions, insertSession } from './session.repository.js'
import { newToken } from '../auth/token.js'
import { challengeIfNeeded, mfaRequired } from '../mfa/mfa.service.js'
import { findActiveFactor } from '../mfa/mfa.repository.js'

function invalidCredentials (headers: Record<string, string>): ApiError {
  return new ApiError('INVALID_CREDENTIALS', { headers })
}

export interface VerifiedCredentials {
  user: UserRow
  /** The RateLimit header fields for the answer. */
  headers: Record<string, string>
  /** Takes the attempt off the failure count; call it in the transaction that acts on the log-in. */
  succeeded: (trx: Executor) => Promise<void>
  /** Takes back only this attempt: the password was right, but a second factor is still asked for. */
  forgive: (trx: Executor) => Promise<void>
}

/**
 * Checks an e-mail and password under the log-in limits. A wrong e-mail and a wrong password
 * give the same error, message and (through the dummy hash) the same time.
 */
export async function verifyCredentials (db: Db, config: Config, email: string, password: string, client: string): Promise<VerifiedCredentials> {
  const user = await findUserByEmail(db, email)
  // Counted as a failure from here on, unless the password turns out right.
  const attempt = await beginLoginAttempt(db, { email: emailKey(email), client, userId: user?.id }, {
    perEmail: config.loginFailuresPerEmail, perClient: config.loginFailuresPerClient, perAccount: config.loginFailuresPerAccount
  })
  // An account without a password (made by a provider) takes the time of a wrong one.
  const ok = user === undefined || !hasPassword(user.password_hash) ? await verifyAgainstDummy(password) : await verifyPassword(user.password_hash, password)
  if (user === undefined || !ok) throw invalidCredentials(attempt.headers(true))
  return { user, headers: attempt.headers(false), succeeded: attempt.succeeded, forgive: attempt.forgive }
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

export async function logIn (db: Db, config: Config, email: string, password: string, client: string) {
  const { user, headers, succeeded, forgive } = await verifyCredentials(db, config, email, password, client)
  if (config.requireEmailVerification && Number(user.email_verified) === 0) {
    // The password was right, but no session until the address is proved. Its failures are
    // cleared, unless a second factor is on: then only its code may clear them.
    const factor = await findActiveFactor(db, user.id)
    await write(db, async (trx) => { await (factor === undefined ? succeeded(trx) : forgive(trx)) })
    throw new ApiError('EMAIL_NOT_VERIFIED', { headers })
  }
  // One transaction (one commit) for everything a successful log-in writes: the session, or,
  // for an account with a second factor, the challenge its code answers.
  const done = await write(db, async (trx) => {
    const challenge = await challengeIfNeeded(trx, user.id)
    if (challenge !== undefined) {
      await forgive(trx)
      return { challenge }
    }
    await succeeded(trx)
    return { session: await startSession(trx, config, user.id) }
  })
  if (done.session === undefined) throw mfaRequired(done.challenge, headers)
  return { session: sessionRepresentation(done.session.token, done.session.expiresAt, user), headers }
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
