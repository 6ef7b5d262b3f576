import { sql } from 'kysely'
import { hashToken, newToken } from '../auth/token.js'
import type { Executor } from '../db/schema.js'
import type { MfaChallengeRow, TotpFactorRow } from './mfa.tables.js'

// The second factor's rows. Every decision that must hold across instances is one statement:
// a code's step is accepted only if it is later than the last accepted one (so a code is good
// once, wherever it is used), a recovery code and a challenge are spent by deleting them.

export const CHALLENGE_LIFETIME_MS = 5 * 60 * 1000
/** The guesses a challenge takes; five wrong codes void it. */
export const CHALLENGE_MAX_FAILURES = 5

export async function findFactor (db: Executor, userId: bigint): Promise<TotpFactorRow | undefined> {
  return await db.selectFrom('totp_factors').selectAll().where('user_id', '=', userId).executeTakeFirst()
}

export async function findActiveFactor (db: Executor, userId: bigint): Promise<TotpFactorRow | undefined> {
  return await db.selectFrom('totp_factors').selectAll().where('user_id', '=', userId).where('status', '=', 'ACTIVE').executeTakeFirst()
}

/** Keeps a new secret waiting for its first code, in place of one that was waiting. */
export async function putPendingFactor (trx: Executor, userId: bigint, sealed: string, now: string): Promise<void> {
  await trx.deleteFrom('totp_factors').where('user_id', '=', userId).where('status', '=', 'PENDING').execute()
  await trx.insertInto('totp_factors').values({ user_id: userId, secret: sealed, status: 'PENDING', created_at: now }).execute()
}

/** The waiting factor becomes active, its first code's step used; false when it was not waiting (any more). */
export async function activateFactor (trx: Executor, id: bigint, step: number, now: string): Promise<boolean> {
  const result = await trx.updateTable('totp_factors').set({ status: 'ACTIVE', activated_at: now, last_used_step: step })
    .where('id', '=', id).where('status', '=', 'PENDING').executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Accepts a code's step for the active factor: false when that step (or a later one) was used already. */
export async function acceptStep (trx: Executor, userId: bigint, step: number): Promise<boolean> {
  const result = await trx.updateTable('totp_factors').set({ last_used_step: step })
    .where('user_id', '=', userId).where('status', '=', 'ACTIVE')
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', BigInt(step))]))
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Removes the account's factor, its recovery codes and its waiting log-ins. */
export async function deleteFactor (trx: Executor, userId: bigint): Promise<void> {
  await trx.deleteFrom('mfa_challenges').where('user_id', '=', userId).execute()
  await trx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute()
  await trx.deleteFrom('totp_factors').where('user_id', '=', userId).execute()
}

export async function replaceRecoveryCodes (trx: Executor, userId: bigint, hashes: string[]): Promise<void> {
  await trx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute()
  await trx.insertInto('recovery_codes').values(hashes.map((codeHash) => ({ user_id: userId, code_hash: codeHash }))).execute()
}

/** Spends a recovery code of the account; false when it has no such code (wrong, or used). */
export async function spendRecoveryCode (trx: Executor, userId: bigint, codeHash: string): Promise<boolean> {
  const result = await trx.deleteFrom('recovery_codes').where('user_id', '=', userId).where('code_hash', '=', codeHash).executeTakeFirst()
  return result.numDeletedRows > 0n
}

export async function countRecoveryCodes (db: Executor, userId: bigint): Promise<number> {
  const row = await db.selectFrom('recovery_codes').select((eb) => eb.fn.countAll().as('count')).where('user_id', '=', userId).executeTakeFirstOrThrow()
  return Number(row.count)
}

/** A log-in waiting for its code (the expired ones cleared); returns the challenge itself, for the answer only. */
export async function insertChallenge (trx: Executor, userId: bigint, now = new Date()): Promise<{ challenge: string, expiresAt: string }> {
  const { token, hash } = newToken()
  const expiresAt = new Date(now.getTime() + CHALLENGE_LIFETIME_MS).toISOString()
  await trx.deleteFrom('mfa_challenges').where('expires_at', '<=', now.toISOString()).execute()
  await trx.insertInto('mfa_challenges').values({ user_id: userId, challenge_hash: hash, created_at: now.toISOString(), expires_at: expiresAt }).execute()
  return { challenge: token, expiresAt }
}

export async function findLiveChallenge (db: Executor, challenge: string, now = new Date()): Promise<MfaChallengeRow | undefined> {
  return await db.selectFrom('mfa_challenges').selectAll()
    .where('challenge_hash', '=', hashToken(challenge)).where('expires_at', '>', now.toISOString())
    .executeTakeFirst()
}

/**
 * Takes one of the challenge's five guesses, before its code is looked at: false when none is
 * left (or it expired, or was spent). Taking a guess is one statement, under the row's lock, so
 * of any number of guesses sent at once exactly five are looked at, and the sixth, however
 * sent, finds the challenge void. A right code then spends the challenge; a wrong one leaves
 * its guess taken.
 */
export async function takeGuess (trx: Executor, id: bigint, now = new Date()): Promise<boolean> {
  const result = await trx.updateTable('mfa_challenges').set({ failures: sql<number>`failures + 1` })
    .where('id', '=', id).where('failures', '<', CHALLENGE_MAX_FAILURES).where('expires_at', '>', now.toISOString())
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Deletes the challenge once its guesses are used up (it can do nothing more). */
export async function dropUsedUpChallenge (trx: Executor, id: bigint): Promise<void> {
  await trx.deleteFrom('mfa_challenges').where('id', '=', id).where('failures', '>=', CHALLENGE_MAX_FAILURES).execute()
}

/** Ends every open challenge of the account (its password was reset or changed). */
export async function deleteChallenges (trx: Executor, userId: bigint): Promise<void> {
  await trx.deleteFrom('mfa_challenges').where('user_id', '=', userId).execute()
}

/** Spends the challenge; false when another request spent it first. */
export async function spendChallenge (trx: Executor, id: bigint): Promise<boolean> {
  const result = await trx.deleteFrom('mfa_challenges').where('id', '=', id).executeTakeFirst()
  return result.numDeletedRows > 0n
}
