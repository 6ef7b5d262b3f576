import type { Executor } from '../db/schema.js'

export async function insertSession (db: Executor, userId: bigint, tokenHash: string, createdAt: string, expiresAt: string): Promise<void> {
  await db.insertInto('sessions')
    .values({ user_id: userId, token_hash: tokenHash, created_at: createdAt, expires_at: expiresAt, authenticated_at: createdAt })
    .execute()
}

/** The holder proved who they are again: the session is recent from `at`. */
export async function markAuthenticated (db: Executor, tokenHash: string, at: string): Promise<void> {
  await db.updateTable('sessions').set({ authenticated_at: at }).where('token_hash', '=', tokenHash).execute()
}

export async function deleteSession (db: Executor, tokenHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute()
}

export async function deleteOtherSessions (db: Executor, userId: bigint, keepTokenHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('token_hash', '!=', keepTokenHash).execute()
}

export async function deleteExpiredSessions (db: Executor, userId: bigint, now: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now).execute()
}

export async function deleteUserSessions (db: Executor, userId: bigint): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute()
}
