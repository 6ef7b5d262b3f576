import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import type { Role } from '../users/user.table.js'

// "Who holds this credential, if it is still good": the lookups behind every authenticated
// request, one indexed lookup each, compiled once. A log-in token is good until its session
// expires or is deleted; an API key until it expires (if it does) or is revoked (deleted). The
// caller's columns are the same for both.

/** The user behind a credential. */
export interface Caller {
  id: bigint
  email: string
  name: string
  role: Role
}

export interface SessionCaller extends Caller {
  expiresAt: Date | string
}

export interface KeyCaller extends Caller {
  keyId: bigint
  scopes: string
  expiresAt: Date | string | null
  lastUsedAt: Date | string | null
}

const CALLER = ['users.id as id', 'users.email as email', 'users.name as name', 'users.role as role'] as const

const liveSession = precompiled((db: Executor, tokenHash: string, now: string) => db.selectFrom('sessions')
  .innerJoin('users', 'users.id', 'sessions.user_id')
  .select([...CALLER, 'sessions.expires_at as expiresAt'])
  .where('sessions.token_hash', '=', tokenHash)
  .where('sessions.expires_at', '>', now))

/** A live key found by one of its unique columns: its hash (a request's key) or its id (a ticket made with a key). */
function liveKeyBy<V extends string | bigint> (column: 'api_keys.key_hash' | 'api_keys.id') {
  return precompiled((db: Executor, value: V, now: string) => db.selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select([...CALLER, 'api_keys.id as keyId', 'api_keys.scopes as scopes', 'api_keys.expires_at as expiresAt', 'api_keys.last_used_at as lastUsedAt'])
    .where(column, '=', value as never)
    .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', now)])))
}
const liveKeyByHash = liveKeyBy<string>('api_keys.key_hash')
const liveKeyById = liveKeyBy<bigint>('api_keys.id')

/** The user behind a live session's token hash. */
export async function findSessionCaller (db: Executor, tokenHash: string, now: string): Promise<SessionCaller | undefined> {
  return (await execute(db, liveSession(db, tokenHash, now))).rows[0]
}

/** The user behind a live key's hash, with the key. */
export async function findKeyCaller (db: Executor, keyHash: string, now: string): Promise<KeyCaller | undefined> {
  return (await execute(db, liveKeyByHash(db, keyHash, now))).rows[0]
}

/** The same, by the key's id. */
export async function findKeyCallerById (db: Executor, keyId: bigint, now: string): Promise<KeyCaller | undefined> {
  return (await execute(db, liveKeyById(db, keyId, now))).rows[0]
}

/** When the holder of this session last proved who they are (undefined: no such session). */
export async function findSessionAuthenticatedAt (db: Executor, tokenHash: string): Promise<Date | string | undefined> {
  return (await db.selectFrom('sessions').select('authenticated_at').where('token_hash', '=', tokenHash).executeTakeFirst())?.authenticated_at
}

export async function setKeyLastUsed (db: Executor, id: bigint, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute()
}
