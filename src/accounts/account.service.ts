import { credentialsRevoked } from '../auth/revocations.js'
import type { Config } from '../config/config.js'
import type { DialectName } from '../db/database.js'
import type { Db, Executor } from '../db/schema.js'
import { isUniqueViolation } from '../db/errors.js'
import { nowIso } from '../db/types.js'
import { afterCommit, write } from '../db/write.js'
import { recordEvent } from '../events/event.repository.js'
import { emailKey } from '../http/email.js'
import { ApiError } from '../http/errors.js'
import { countHit, recordHit, type Hit } from '../http/sliding-window.js'
import { queueMail, type QueuedMail } from '../mail/mail.repository.js'
import { deleteUserSessions } from '../sessions/session.repository.js'
import { hashPassword } from '../users/password.js'
import { lockUser } from '../users/user.repository.js'
import { toUserAccount } from '../users/user.representation.js'
import type { UserRow } from '../users/user.table.js'
import { mailDomain } from './account-links.js'
import { findLiveToken, spendToken, voidTokens } from './account-token.repository.js'

// Proving and recovering accounts (docs/accounts.md): asking for a mail, spending its token.

/** Queues an account mail in the unit of work of the change that causes it. */
export async function queueAccountMail (trx: Executor, config: Config, mail: QueuedMail): Promise<void> {
  await queueMail(trx, mail, mailDomain(config))
}

/**
 * A mail asked for by address (a password reset, a new verification mail). The request does
 * the same work whatever the address: it counts the address against the mail limits and
 * queues a mail that names no account; the sender looks the account up later
 * (accounts/account-mail.ts). So the answer, its time and its limits are the same for an
 * address that has an account and one that has none.
 */
export async function requestMail (db: Db, dialect: DialectName, config: Config, kind: 'verify-email' | 'reset-password', email: string): Promise<Record<string, string>> {
  // One unit of work (one commit) for the count and the mail.
  const counted = await write(db, async (trx) => {
    const count = await countHit(trx, dialect, 'mail-address', emailKey(email), [
      { name: 'mail-minute', limit: config.mail.perAddressPerMinute, seconds: 60 },
      { name: 'mail-hour', limit: config.mail.perAddressPerHour, seconds: 3600 }
    ], 'Too many mails were asked for this address. Try again later.')
    if (!count.refused) await queueAccountMail(trx, config, { kind, address: email })
    return count
  })
  if (counted.refused) throw counted.error
  return counted.hit.headers
}

/** Counts a token against the client's failures; taken back in the unit of work a good token makes. */
async function tokenAttempt (db: Db, dialect: DialectName, config: Config, client: string) {
  return await recordHit(db, dialect, 'token-client', client, [{ name: 'token-failures', limit: config.mail.tokenFailuresPerClientPerMinute, seconds: 60 }],
    'Too many invalid tokens from this address. Try again later.')
}

const invalidToken = (): ApiError => new ApiError('INVALID_TOKEN')

/** Sets the account's fields and records the change as the user's (user.updated). */
async function updateAccount (trx: Executor, user: UserRow, set: { email?: string, email_verified?: number, pending_email?: string | null, password_hash?: string }): Promise<UserRow> {
  const changed = await trx.updateTable('users').set({ ...set, updated_at: nowIso() }).where('id', '=', user.id).returningAll().executeTakeFirstOrThrow()
  const shown = toUserAccount(changed)
  const before = toUserAccount(user)
  if (shown.email !== before.email || shown.emailVerified !== before.emailVerified || shown.pendingEmail !== before.pendingEmail) {
    await recordEvent(trx, { type: 'user.updated', resourceId: user.id, audience: user.id, data: shown })
  }
  return changed
}

/**
 * Spends a verification token. The token proves the address it was mailed to, while the account
 * has it: its `email` (now verified) or its `pendingEmail` (now its `email`, if no other
 * account took that address meanwhile: 409 DUPLICATE_EMAIL; the old address is told).
 */
export async function verifyEmail (db: Db, dialect: DialectName, config: Config, token: string, client: string): Promise<void> {
  const attempt = await tokenAttempt(db, dialect, config, client)
  try {
    await spendVerification(db, dialect, config, token, attempt)
  } catch (error) {
    // A good token whose address another account took meanwhile is not a failed token.
    if (error instanceof ApiError && error.code === 'DUPLICATE_EMAIL') await write(db, async (trx) => { await attempt.takeBack(trx) })
    throw error
  }
}

async function spendVerification (db: Db, dialect: DialectName, config: Config, token: string, attempt: Hit): Promise<void> {
  await write(db, async (trx) => {
    const spent = await spendToken(trx, 'verify-email', token)
    if (spent === undefined) throw invalidToken()
    const user = await lockUser(trx, dialect, spent.user_id)
    if (user === undefined) throw invalidToken()
    const proved = emailKey(spent.email)
    if (emailKey(user.email) === proved) {
      await updateAccount(trx, user, { email_verified: 1 })
    } else if (user.pending_email !== null && emailKey(user.pending_email) === proved) {
      try {
        await updateAccount(trx, user, { email: user.pending_email, email_verified: 1, pending_email: null })
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError('DUPLICATE_EMAIL', { message: 'Another account took this e-mail address meanwhile.', cause: error })
        throw error
      }
      await queueAccountMail(trx, config, { kind: 'email-changed', userId: user.id, address: user.email, data: { name: user.name, newEmail: user.pending_email } })
    } else {
      // Mailed to an address the account no longer has or asks for.
      throw invalidToken()
    }
    await attempt.takeBack(trx)
  })
}

/**
 * Spends a reset token: the password is replaced, every session of the account ends (its open
 * event streams too), every other reset token is void, and a notice goes to the address. No
 * session is made: the person logs in with the new password. The mail proved the address, so
 * an unverified one that still is the account's becomes verified.
 */
export async function resetPassword (db: Db, dialect: DialectName, config: Config, token: string, newPassword: string, client: string): Promise<void> {
  const attempt = await tokenAttempt(db, dialect, config, client)
  // A look first, so that a wrong token never costs a password hash.
  if (await findLiveToken(db, 'reset-password', token) === undefined) throw invalidToken()
  const passwordHash = await hashPassword(newPassword)
  await write(db, async (trx) => {
    const spent = await spendToken(trx, 'reset-password', token)
    if (spent === undefined) throw invalidToken()
    const user = await lockUser(trx, dialect, spent.user_id)
    if (user === undefined) throw invalidToken()
    const proves = emailKey(user.email) === emailKey(spent.email)
    await updateAccount(trx, user, { password_hash: passwordHash, ...(proves ? { email_verified: 1 } : {}) })
    await afterPasswordReplaced(trx, config, user, 'reset')
    await deleteUserSessions(trx, user.id)
    afterCommit(trx, () => { credentialsRevoked(db, { userId: user.id }) })
    await attempt.takeBack(trx)
  })
}

/** What every replacement of a password does besides (a reset, a change): reset tokens void, a notice to the address. */
export async function afterPasswordReplaced (trx: Executor, config: Config, user: UserRow, how: 'reset' | 'change'): Promise<void> {
  await voidTokens(trx, user.id, 'reset-password')
  await queueAccountMail(trx, config, { kind: 'password-changed', userId: user.id, address: user.email, data: { name: user.name, how } })
}
