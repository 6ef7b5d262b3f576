import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import type { Role } from '../users/user.table.js'

export interface SessionUser {
  id: bigint
  email: string
  name: string
  role: Role
  expiresAt: Date | string
}

export async function insertSession (db: Executor, userId: bigint, tokenHash: string, createdAt: string, expiresAt: string): Promise<void> {
  await db.insertInto('sessions')
    .values({ user_id: userId, token_hash: tokenHash, created_at: createdAt, expires_at: expiresAt })
    .execute()
}

/** The user behind a live (unexpired, not revoked) session token hash. */
// Runs on every authenticated request: compiled once.
const sessionUser = precompiled((db: Executor, tokenHash: string, now: string) => db.selectFrom('sessions')
  .innerJoin('users', 'users.id', 'sessions.user_id')
  .select(['users.id as id', 'users.email as email', 'users.name as name', 'users.role as role', 'sessions.expires_at as expiresAt'])
  .where('sessions.token_hash', '=', tokenHash)
  .where('sessions.expires_at', '>', now))

export async function findSessionUser (db: Executor, tokenHash: string, now: string): Promise<SessionUser | undefined> {
  return (await execute(db, sessionUser(db, tokenHash, now))).rows[0]
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
