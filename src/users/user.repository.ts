import type { DialectName } from '../db/database.js'
import { execute } from '../db/compiled.js'
import { precompiledLock } from '../db/lock.js'
import type { Executor } from '../db/schema.js'
import { isUniqueViolation } from '../db/errors.js'
import { ApiError } from '../http/errors.js'
import { createdAtDirection } from '../http/created-range.js'
import type { Role, UserRow } from './user.table.js'
import { emailKey } from '../http/email.js'
import { sql } from 'kysely'
import { pageAfter, readPage } from '../db/keyset.js'
import type { PagePosition } from '../http/sorted-paging.js'
import type { UserListing } from './user.listing.js'

// Uniqueness of e-mail is the database's job (a unique index on lower(email)); its violation,
// from either dialect, becomes DUPLICATE_EMAIL. There is no check-then-insert race to lose.
async function mapDuplicateEmail<T> (work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (error) {
    if (isUniqueViolation(error)) throw new ApiError('DUPLICATE_EMAIL', { cause: error })
    throw error
  }
}

export interface NewUser {
  email: string
  name: string
  passwordHash: string
  role: Role
  /** Whether the address is proved already (an administrator's; a provider's verified address); default false. */
  emailVerified?: boolean
  now: string
}

export async function insertUser (db: Executor, user: NewUser): Promise<UserRow> {
  return await mapDuplicateEmail(db.insertInto('users')
    .values({ email: user.email, name: user.name, password_hash: user.passwordHash, role: user.role, email_verified: user.role === 'ADMIN' || user.emailVerified === true ? 1 : 0, created_at: user.now, updated_at: user.now })
    .returningAll()
    .executeTakeFirstOrThrow())
}

export async function findUserById (db: Executor, id: bigint): Promise<UserRow | undefined> {
  return await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findUserByEmail (db: Executor, email: string): Promise<UserRow | undefined> {
  return await db.selectFrom('users').selectAll()
    .where((eb) => eb(eb.fn('lower', ['email']), '=', emailKey(email)))
    .executeTakeFirst()
}

/** Whether an account other than `id` has this address (a proposal elsewhere does not count). */
export async function emailTakenByOther (db: Executor, email: string, id: bigint): Promise<boolean> {
  const row = await db.selectFrom('users').select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', emailKey(email)))
    .where('id', '!=', id)
    .executeTakeFirst()
  return row !== undefined
}

// Named columns, not `*`: the lock runs as a prepared statement (db/statement-names.ts).
const userForUpdate = precompiledLock((db: Executor, id: bigint) =>
  db.selectFrom('users').select(['id', 'email', 'name', 'password_hash', 'role', 'email_verified', 'pending_email', 'created_at', 'updated_at', 'avatar']).where('id', '=', id))

/** The user row, locked until the end of the transaction (for a read-check-write sequence). */
export async function lockUser (trx: Executor, dialect: DialectName, id: bigint): Promise<UserRow | undefined> {
  return (await execute(trx, userForUpdate(trx, dialect, id))).rows[0]
}

export async function updateUser (db: Executor, id: bigint, changes: { email: string, pendingEmail: string | null, name: string, now: string }): Promise<UserRow> {
  return await mapDuplicateEmail(db.updateTable('users')
    .set({ email: changes.email, pending_email: changes.pendingEmail, name: changes.name, updated_at: changes.now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow())
}

export async function updatePasswordHash (db: Executor, id: bigint, passwordHash: string, now: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', id).execute()
}

/** Deletes the user; sessions, posts and orders go with it through ON DELETE CASCADE. */
export async function deleteUser (db: Executor, id: bigint): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute()
}

export async function countPostsByAuthor (db: Executor, authorId: bigint): Promise<number> {
  const row = await db.selectFrom('posts').select((eb) => eb.fn.countAll().as('count'))
    .where('author_id', '=', authorId).executeTakeFirstOrThrow()
  return Number(row.count)
}

/** The ids of a user's posts, oldest first (the posts deleted with the account). */
export async function postIdsOfAuthor (db: Executor, authorId: bigint): Promise<bigint[]> {
  const rows = await db.selectFrom('posts').select('id').where('author_id', '=', authorId).orderBy('id').execute()
  return rows.map((row) => row.id)
}

/** Writes the user's avatar (its JSON, files/image.representation.ts, or null); the user as they now are. */
export async function setAvatar (db: Executor, id: bigint, avatar: string | null, now: string): Promise<UserRow> {
  return await db.updateTable('users').set({ avatar, updated_at: now }).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/** A user of an administrator's list: the row and whether a second factor is on. */
export type ListedUserRow = Omit<UserRow, 'password_hash' | 'avatar'> & { mfa_enabled: boolean | number | bigint }

const LISTED_COLUMNS = ['users.id', 'users.email', 'users.name', 'users.role', 'users.email_verified', 'users.pending_email', 'users.created_at', 'users.updated_at'] as const

/** `%`, `_` and `\` of a text to find inside LIKE's pattern, each taken as itself (PostgreSQL's escape is `\`). */
function likeInside (text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/**
 * The queries of `limit` users of an administrator's list in its order, after `position` when
 * given (one, or two on SQLite: db/keyset.ts); `q` found by trigrams (migration 022): FTS5's
 * trigram index with the text as one quoted phrase on SQLite, pg_trgm's on PostgreSQL.
 */
export function listUsersQueries (db: Executor, dialect: DialectName, listing: UserListing, limit: number, position: PagePosition<string> | undefined) {
  let query = db.selectFrom('users').select([
    ...LISTED_COLUMNS,
    (eb) => eb.exists(eb.selectFrom('totp_factors').select('totp_factors.id').whereRef('totp_factors.user_id', '=', 'users.id').where('totp_factors.status', '=', 'ACTIVE')).as('mfa_enabled')
  ])
  if (listing.q !== undefined) {
    query = dialect === 'postgres'
      ? query.where(sql<boolean>`(users.email ilike ${likeInside(listing.q)} or users.name ilike ${likeInside(listing.q)})`)
      : query.where(sql<boolean>`users.id in (select rowid from users_search where users_search match ${`"${listing.q.replaceAll('"', '""')}"`})`)
  }
  if (listing.role !== undefined) query = query.where('users.role', '=', listing.role)
  if (listing.emailVerified !== undefined) query = query.where('users.email_verified', '=', listing.emailVerified ? 1 : 0)
  const direction = createdAtDirection(listing.sort)
  if (position !== undefined) return pageAfter(dialect, query, { table: 'users', column: 'created_at', direction }, position, limit)
  return [query.orderBy('users.created_at', direction).orderBy('users.id', direction).limit(limit)]
}

export async function listUsers (db: Executor, dialect: DialectName, listing: UserListing, limit: number, position: PagePosition<string> | undefined): Promise<ListedUserRow[]> {
  return await readPage(listUsersQueries(db, dialect, listing, limit, position), limit, async (query) => await query.execute())
}
