import type { Selectable } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import type { Role } from '../users/user.table.js'
import type { ApiKeyTable } from './api-key.table.js'

export type ApiKeyRow = Selectable<ApiKeyTable>

export interface NewApiKey {
  userId: bigint
  name: string
  scopes: string[]
  prefix: string
  keyHash: string
  now: string
  expiresAt: string | null
}

export async function insertApiKey (db: Executor, key: NewApiKey): Promise<ApiKeyRow> {
  return await db.insertInto('api_keys').values({
    user_id: key.userId, name: key.name, scopes: key.scopes.join(' '), prefix: key.prefix, key_hash: key.keyHash, created_at: key.now, expires_at: key.expiresAt
  }).returningAll().executeTakeFirstOrThrow()
}

/** The owner's live keys (expired ones do not count against the cap). */
export async function countLiveKeys (db: Executor, userId: bigint, now: string): Promise<number> {
  const row = await db.selectFrom('api_keys').select((eb) => eb.fn.countAll<string | number>().as('count'))
    .where('user_id', '=', userId).where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])).executeTakeFirstOrThrow()
  return Number(row.count)
}

export async function listApiKeys (db: Executor, userId: bigint, limit: number, before: bigint | undefined): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').limit(limit)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

/** The owner's key with this id (someone else's is not found). */
export async function findApiKey (db: Executor, userId: bigint, id: bigint): Promise<ApiKeyRow | undefined> {
  return await db.selectFrom('api_keys').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
}

export async function deleteApiKey (db: Executor, id: bigint): Promise<void> {
  await db.deleteFrom('api_keys').where('id', '=', id).execute()
}

export interface KeyUser {
  id: bigint
  email: string
  name: string
  role: Role
  keyId: bigint
  scopes: string
  expiresAt: Date | string | null
  lastUsedAt: Date | string | null
}

// Runs on every request made with a key: compiled once, one indexed lookup by hash, as a log-in token's.
const keyUser = precompiled((db: Executor, keyHash: string, now: string) => db.selectFrom('api_keys')
  .innerJoin('users', 'users.id', 'api_keys.user_id')
  .select(['users.id as id', 'users.email as email', 'users.name as name', 'users.role as role', 'api_keys.id as keyId',
    'api_keys.scopes as scopes', 'api_keys.expires_at as expiresAt', 'api_keys.last_used_at as lastUsedAt'])
  .where('api_keys.key_hash', '=', keyHash)
  .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', now)])))

const keyUserById = precompiled((db: Executor, keyId: bigint, now: string) => db.selectFrom('api_keys')
  .innerJoin('users', 'users.id', 'api_keys.user_id')
  .select(['users.id as id', 'users.email as email', 'users.name as name', 'users.role as role', 'api_keys.id as keyId',
    'api_keys.scopes as scopes', 'api_keys.expires_at as expiresAt', 'api_keys.last_used_at as lastUsedAt'])
  .where('api_keys.id', '=', keyId)
  .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', now)])))

/** The same, by the key's id (a stream ticket made with a key names it so). */
export async function findKeyUserById (db: Executor, keyId: bigint, now: string): Promise<KeyUser | undefined> {
  return (await execute(db, keyUserById(db, keyId, now))).rows[0]
}

/** The user behind a live (unexpired, not revoked) key hash, with the key. */
export async function findKeyUser (db: Executor, keyHash: string, now: string): Promise<KeyUser | undefined> {
  return (await execute(db, keyUser(db, keyHash, now))).rows[0]
}

export async function setLastUsed (db: Executor, id: bigint, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute()
}
