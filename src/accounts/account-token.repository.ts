import { hashToken, newToken } from '../auth/token.js'
import type { Executor } from '../db/schema.js'
import type { AccountTokenRow, TokenPurpose } from './account-token.table.js'

// Mailed tokens: 256 random bits (auth/token.ts), of which only the SHA-256 is kept. A token is
// single use (spending it deletes it), voided by the next one of its purpose for the account
// (issuing deletes the others), and good until it expires. Unknown, used, voided and expired
// tokens all read as "no token": the answer is the same for each.

export const TOKEN_LIFETIME_MS: Record<TokenPurpose, number> = {
  'verify-email': 24 * 60 * 60 * 1000,
  'reset-password': 30 * 60 * 1000
}

/** Makes a token for the account and address, voiding the account's others of the purpose; returns the token itself (for the mail only). */
export async function issueToken (trx: Executor, userId: bigint, purpose: TokenPurpose, email: string, now = new Date()): Promise<string> {
  const { token, hash } = newToken()
  await trx.deleteFrom('account_tokens').where('user_id', '=', userId).where('purpose', '=', purpose).execute()
  await trx.insertInto('account_tokens').values({
    user_id: userId,
    purpose,
    token_hash: hash,
    email,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + TOKEN_LIFETIME_MS[purpose]).toISOString()
  }).execute()
  return token
}

/** The live token of this purpose, without spending it (a cheap look before slow work). */
export async function findLiveToken (db: Executor, purpose: TokenPurpose, token: string, now = new Date()): Promise<AccountTokenRow | undefined> {
  return await db.selectFrom('account_tokens').selectAll()
    .where('token_hash', '=', hashToken(token)).where('purpose', '=', purpose).where('expires_at', '>', now.toISOString())
    .executeTakeFirst()
}

/**
 * Spends a live token: deletes it and returns it, or undefined. Of several requests spending the
 * same token at once exactly one gets it (the delete is the decision, under the row's lock).
 */
export async function spendToken (trx: Executor, purpose: TokenPurpose, token: string, now = new Date()): Promise<AccountTokenRow | undefined> {
  return await trx.deleteFrom('account_tokens')
    .where('token_hash', '=', hashToken(token)).where('purpose', '=', purpose).where('expires_at', '>', now.toISOString())
    .returningAll().executeTakeFirst()
}

/** Voids the account's tokens of a purpose (all of them, or those mailed to one address). */
export async function voidTokens (trx: Executor, userId: bigint, purpose: TokenPurpose, email?: string): Promise<void> {
  await trx.deleteFrom('account_tokens').where('user_id', '=', userId).where('purpose', '=', purpose)
    .$if(email !== undefined, (qb) => qb.where('email', '=', email!))
    .execute()
}

/** Whether the account holds a live token of the purpose mailed to this address. */
export async function hasLiveToken (db: Executor, userId: bigint, purpose: TokenPurpose, email: string, now = new Date()): Promise<boolean> {
  const row = await db.selectFrom('account_tokens').select('id')
    .where('user_id', '=', userId).where('purpose', '=', purpose).where('email', '=', email).where('expires_at', '>', now.toISOString())
    .executeTakeFirst()
  return row !== undefined
}
