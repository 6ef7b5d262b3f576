import type { Selectable } from 'kysely'
import type { Executor } from '../db/schema.js'
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
