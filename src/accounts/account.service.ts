import { credentialsRevoked } from '../auth/revocations.js'
import type { Config } from '../config/config.js'
import type { Db, Executor } from '../db/schema.js'
import { dialectOf, type DialectName } from '../db/database.js'
import { isUniqueViolation } from '../db/errors.js'
import { afterCommit, write } from '../db/write.js'
import { emailKey } from '../http/email.js'
import { ApiError } from '../http/errors.js'
import { countHit, recordHit, type Hit, type HitCount } from '../limits/sliding-window.js'
import { queueMail, type QueuedMail } from '../mail/mail.repository.js'
import type { MailKind } from '../mail/mail.table.js'
import { deleteChallenges } from '../mfa/mfa.repository.js'
import { deleteUserSessions } from '../sessions/session.repository.js'
import { hashPassword } from '../users/password.js'
import { lockUser } from '../users/user.repository.js'
import type { UserRow } from '../users/user.table.js'
import { mailDomain } from './account-links.js'
import { findLiveToken, spendToken, voidTokens } from './account-token.repository.js'
import { proveAddress } from './address-proven.js'

// Proving and recovering accounts (docs/accounts.md): asking for a mail, spending its token.

/** The limits of mail to one address: a minute's and an hour's worth (MAIL_PER_ADDRESS_PER_MINUTE, _PER_HOUR). */
async function countMailTo (trx: Executor, config: Config, address: string): Promise<HitCount> {
  return await countHit(trx, dialectOf(config.databaseUrl), 'mail-address', emailKey(address), [
    { name: 'mail-minute', limit: config.mail.perAddressPerMinute, seconds: 60 },
    { name: 'mail-hour', limit: config.mail.perAddressPerHour, seconds: 3600 }
  ], 'Too many mails went to this address. Try again later.')
}

/** Whether an account has this address, proven. */
async function isProvenAddress (db: Executor, address: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', emailKey(address))).where('email_verified', '=', 1)
    .executeTakeFirst()
  return row !== undefined
}

/** The mails a change cannot go without: the link that proves a new address. The others are notices. */
const REQUIRED: ReadonlySet<MailKind> = new Set(['verify-email', 'reset-password'])

/**
 * Queues an account mail in the unit of work of the change that causes it. A mail to an address
 * that is not an account's proven address counts against that address's limits (whoever makes
 * the changes, a stranger's mail box must not be flooded through them: a sign-up, a new address
 * proposed again and again): past a limit, a mail the change needs makes it 429
 * TOO_MANY_REQUESTS (thrown in the unit, so nothing changes), and a notice is not sent.
 */
export async function queueAccountMail (trx: Executor, config: Config, mail: QueuedMail): Promise<void> {
  if (!await isProvenAddress(trx, mail.address)) {
    const count = await countMailTo(trx, config, mail.address)
    if (count.refused) {
      if (REQUIRED.has(mail.kind)) throw count.error
      return
    }
  }
  await queueMail(trx, mail, mailDomain(config))
}

/**
 * A mail asked for by address (a password reset, a new verification mail). The request does
 * the same work whatever the address: it counts the address against the mail limits and
 * queues a mail that names no account; the sender looks the account up later
 * (accounts/account-mail.ts). So the answer, its time and its limits are the same for an
 * address that has an account and one that has none.
 */
export async function requestMail (db: Db, config: Config, kind: 'verify-email' | 'reset-password', email: string): Promise<Record<string, string>> {
  // One unit of work (one commit) for the count and the mail.
  // Counted whatever the address (proven, unproven, nobody's), so the answer says nothing of it.
  const counted = await write(db, async (trx) => {
    const count = await countMailTo(trx, config, email)
    if (!count.refused) await queueMail(trx, { kind, address: email }, mailDomain(config))
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
      await proveAddress(trx, db, user, 'verification')
    } else if (user.pending_email !== null && emailKey(user.pending_email) === proved) {
      try {
        await proveAddress(trx, db, user, 'verification', { email: user.pending_email, pending_email: null })
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError('DUPLICATE_EMAIL', { message: 'Another account took this e-mail address meanwhile.', cause: error })
        throw error
      }
      // The reset links mailed to the old address prove nothing about the new one.
      await voidTokens(trx, user.id, 'reset-password')
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
 * event streams too), every other reset token and every open second-factor challenge is void,
 * and a notice goes to the address. No session is made: the person logs in with the new
 * password. A token is good only while the account's address is the one it was mailed to. The
 * mail proved the address: one never proven before becomes proven, and whatever was set up on
 * the account before ends with it (address-proven.ts).
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
    // Mailed to an address the account no longer has: it proves nothing about the account now.
    if (user === undefined || emailKey(user.email) !== emailKey(spent.email)) throw invalidToken()
    const reset = await proveAddress(trx, db, user, 'reset', { password_hash: passwordHash })
    await afterPasswordReplaced(trx, config, reset, 'reset')
    await deleteUserSessions(trx, user.id)
    afterCommit(trx, () => { credentialsRevoked(db, { userId: user.id }) })
    await attempt.takeBack(trx)
  })
}

/**
 * What every replacement of a password does besides (a reset, a change): reset tokens void, the
 * log-ins waiting for a second factor's code void (they were begun with the old password), a
 * notice to the address.
 */
export async function afterPasswordReplaced (trx: Executor, config: Config, user: UserRow, how: 'reset' | 'change'): Promise<void> {
  await voidTokens(trx, user.id, 'reset-password')
  await deleteChallenges(trx, user.id)
  await queueAccountMail(trx, config, { kind: 'password-changed', userId: user.id, address: user.email, data: { name: user.name, how } })
}
