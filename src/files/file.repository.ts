import { sql } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import type { Executor } from '../db/schema.js'
import { toIso } from '../db/types.js'
import type { StoredImage } from './image.representation.js'
import type { FileRow } from './file.table.js'

// The rows of files and of their blobs. How they keep every row's bytes in the storage (the
// order of a put, a commit and a removal) is told in file.service.ts and blob-sweep.ts.

/** What a file belongs to: a product's or a post's images, or a user's avatar. */
export type Owner = { kind: 'product' | 'post' | 'avatar', id: bigint }

const OWNER_COLUMN = { product: 'product_id', post: 'post_id', avatar: 'avatar_of' } as const

/**
 * Registers the blob for a file about to refer to it, inside the file's transaction, and locks
 * its row until the transaction ends (PostgreSQL: an upsert takes the row's lock; SQLite holds
 * the write lock). True when its removal has begun: the caller must not refer to it now.
 */
export async function registerBlob (trx: Executor, key: string, now: string): Promise<{ removing: boolean }> {
  const row = await trx.insertInto('blobs').values({ key, removing: 0, created_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ key: (eb) => eb.ref('excluded.key') }))
    .returning('removing')
    .executeTakeFirstOrThrow()
  return { removing: Number(row.removing) === 1 }
}

/** Whether the blob's row is there. */
export async function blobExists (db: Executor, key: string): Promise<boolean> {
  return (await db.selectFrom('blobs').select('key').where('key', '=', key).executeTakeFirst()) !== undefined
}

/** Whether the blob's removal has begun and not ended. */
export async function blobRemoving (db: Executor, key: string): Promise<boolean> {
  return (await db.selectFrom('blobs').select('key').where('key', '=', key).where('removing', '=', 1).executeTakeFirst()) !== undefined
}

export interface NewFile {
  key: string
  contentType: string
  size: number
  width: number
  height: number
  thumbSize: number
  mediumSize: number
  owner: Owner
  now: string
}

export async function insertFile (trx: Executor, file: NewFile): Promise<FileRow> {
  return await trx.insertInto('files').values({
    blob_key: file.key,
    content_type: file.contentType,
    size: file.size,
    width: file.width,
    height: file.height,
    thumb_size: file.thumbSize,
    medium_size: file.mediumSize,
    [OWNER_COLUMN[file.owner.kind]]: file.owner.id,
    created_at: file.now
  }).returningAll().executeTakeFirstOrThrow()
}

// Every read of a file's bytes looks its row up: compiled once, a named prepared statement on
// PostgreSQL (db/compiled.ts), its columns named.
const FILE_COLUMNS = ['id', 'blob_key', 'content_type', 'size', 'width', 'height', 'thumb_size', 'medium_size', 'product_id', 'post_id', 'avatar_of', 'created_at'] as const
const fileById = precompiled((db: Executor, id: bigint) => db.selectFrom('files').select(FILE_COLUMNS).where('id', '=', id))

export async function findFile (db: Executor, id: bigint): Promise<FileRow | undefined> {
  return (await execute(db, fileById(db, id))).rows[0]
}

/** The owner's files, oldest first. */
export async function filesOf (db: Executor, owner: Owner): Promise<FileRow[]> {
  return await db.selectFrom('files').selectAll().where(OWNER_COLUMN[owner.kind], '=', owner.id).orderBy('id').execute()
}

/** Deletes the owner's file; the row deleted, or undefined when the owner has no such file. */
export async function deleteFile (trx: Executor, owner: Owner, id: bigint): Promise<FileRow | undefined> {
  return await trx.deleteFrom('files').where('id', '=', id).where(OWNER_COLUMN[owner.kind], '=', owner.id).returningAll().executeTakeFirst()
}

/** A file as its owner's row shows it (image.representation.ts). */
export function storedImage (row: FileRow): StoredImage {
  return {
    id: Number(row.id),
    contentType: row.content_type as StoredImage['contentType'],
    size: Number(row.size),
    width: Number(row.width),
    height: Number(row.height),
    sha256: row.blob_key,
    createdAt: toIso(row.created_at)
  }
}

/**
 * Marks the blob's removal as begun, if no file refers to it: under its row's lock (taken first,
 * so that a file's transaction that registered it has committed or rolled back), by a statement
 * that sees every committed file. False when a file refers to it or its row is gone.
 */
export async function beginRemoval (trx: Executor, dialect: DialectName, key: string): Promise<boolean> {
  const lock = trx.selectFrom('blobs').select('key').where('key', '=', key)
  if ((await (dialect === 'postgres' ? lock.forUpdate() : lock).executeTakeFirst()) === undefined) return false
  const referred = await trx.selectFrom('files').select('id').where('blob_key', '=', key).limit(1).executeTakeFirst()
  if (referred !== undefined) return false
  await trx.updateTable('blobs').set({ removing: 1 }).where('key', '=', key).execute()
  return true
}

/**
 * Claims a stored blob that has no row (an upload that stopped between its put and its commit),
 * as a blob whose removal has begun. False when it has a row (an upload registered it).
 */
export async function claimOrphan (trx: Executor, key: string, now: string): Promise<boolean> {
  const row = await trx.insertInto('blobs').values({ key, removing: 1, created_at: now })
    .onConflict((oc) => oc.column('key').doNothing())
    .returning('key')
    .executeTakeFirst()
  return row !== undefined
}

/** Ends a removal: the blob's bytes are gone from the storage. */
export async function forgetBlob (db: Executor, key: string): Promise<void> {
  await db.deleteFrom('blobs').where('key', '=', key).where('removing', '=', 1).execute()
}

/** Blobs no file refers to (a removal to begin, or one begun and not ended). */
export async function unreferencedBlobs (db: Executor, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('blobs').select('key')
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('files').select(sql.lit(1).as('one')).whereRef('files.blob_key', '=', 'blobs.key'))))
    .limit(limit)
    .execute()
  return rows.map((row) => row.key)
}

/** Of these keys, those that have a row. */
export async function knownBlobs (db: Executor, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const rows = await db.selectFrom('blobs').select('key').where('key', 'in', keys).execute()
  return new Set(rows.map((row) => row.key))
}

/**
 * Takes the named lease for `ms` if no other holder has it now (or renews the holder's own): true
 * when taken. One instance at a time does the work it names, on either database.
 */
export async function takeLease (trx: Executor, name: string, holder: string, ms: number): Promise<boolean> {
  const now = new Date()
  const row = await trx.insertInto('leases').values({ name, holder, until: new Date(now.getTime() + ms).toISOString() })
    .onConflict((oc) => oc.column('name')
      .doUpdateSet({ holder: (eb) => eb.ref('excluded.holder'), until: (eb) => eb.ref('excluded.until') })
      .where((eb) => eb.or([eb('leases.until', '<', now.toISOString()), eb('leases.holder', '=', holder)])))
    .returning('holder')
    .executeTakeFirst()
  return row !== undefined
}

export async function releaseLease (trx: Executor, name: string, holder: string): Promise<void> {
  await trx.deleteFrom('leases').where('name', '=', name).where('holder', '=', holder).execute()
}
