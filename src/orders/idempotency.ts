import { hash } from 'node:crypto'
import { sql, type Transaction } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import type { Database, Db, Executor } from '../db/schema.js'
import { jsonWithBigInts } from '../db/types.js'
import { write } from '../db/write.js'
import { ApiError, isApiError, type ErrorCode } from '../http/errors.js'

// Idempotency-Key for POST /v1/orders (docs/shop.md).
//
// The key's record and the work it guards live in ONE database transaction: the record is
// inserted first (IN_PROGRESS), the work runs, and the record is completed (DONE, with the
// response) before the commit. Consequences:
// - Concurrent requests with one key: the unique index (user_id, key) makes the second insert
//   wait until the first transaction ends (PostgreSQL waits on the index entry; SQLite runs
//   write transactions one at a time), then it finds the completed record and replays it. On
//   PostgreSQL the wait is bounded by KEY_LOCK_TIMEOUT, after which the answer is 409
//   IDEMPOTENCY_KEY_IN_USE. Exactly one order is created.
// - A crash mid-request (process killed, connection lost) rolls the whole transaction back: no
//   order, no stock change and no record, so nothing is ever left IN_PROGRESS and a retry
//   simply runs the request. There is no abandoned-key recovery to do.
// - A 5xx (including 503) also rolls everything back: nothing is stored, the key is free again.
// - A business refusal (4xx ApiError thrown by the work: 404 PRODUCT_NOT_FOUND, 409
//   PRODUCT_NOT_ON_SALE, 409 NOT_ENOUGH_STOCK) is stored and replayed, like a success: the key
//   names one attempt. The work runs under a savepoint, so whatever it wrote before refusing is
//   undone while the record is kept.
// Requests that fail before the work starts (401, 400, 415, …) never reach this module and
// store nothing. Records expire after TTL_MS; an expired key is as good as new, and every keyed
// request deletes a batch of expired records (of any user) on its way.

export const HEADER = 'idempotency-key'
export const REPLAYED_HEADER = 'idempotent-replayed'
export const TTL_MS = 24 * 60 * 60 * 1000
export const KEY_LOCK_TIMEOUT = '3s'

/**
 * The key from the request headers, or undefined when none was sent. Its shape (1 to 255
 * printable ASCII characters) is checked by validation, with the rest of the request, from the
 * route's header schema.
 */
export function readKey (headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers[HEADER]
  return typeof value === 'string' ? value : undefined
}

/** A fingerprint of what the request asks for; the same request always gives the same hash. */
export function requestHash (parts: unknown[]): string {
  return hash('sha256', JSON.stringify(parts), 'base64url')
}

export interface Response<T> {
  status: number
  body: T
}

export type Outcome<T> =
  | { replayed: false, response: Response<T> }
  | { replayed: true, status: number, body: string }

interface StoredError {
  code: ErrorCode
  message: string
}

const WORK_SAVEPOINT = 'idempotent_work'

/**
 * Runs `work` in a transaction guarded by the caller's key. Returns the fresh response, or the
 * stored one (`replayed: true`, its body as stored text). A stored refusal is thrown again as
 * its ApiError with `Idempotent-Replayed: true`.
 */
export async function runIdempotent<T> (
  db: Db,
  dialect: DialectName,
  scope: { userId: bigint, key: string, requestHash: string },
  work: (trx: Transaction<Database>) => Promise<Response<T>>
): Promise<Outcome<T>> {
  const outcome = await write(db, async (trx): Promise<Outcome<T> | { refused: ApiError }> => {
    const now = new Date()
    const nowText = now.toISOString()
    // An expired key is as good as new: its record goes (one row, so no lock-order trouble).
    await execute(trx, deleteExpiredKey(trx, scope.userId, scope.key, nowText))
    await sweepExpired(trx, dialect, nowText)

    const reserved = await reserve(trx, dialect, scope, nowText, new Date(now.getTime() + TTL_MS).toISOString())
    if (!reserved) return await existingOutcome<T>(trx, scope)

    await sql`savepoint ${sql.raw(WORK_SAVEPOINT)}`.execute(trx)
    let stored: Response<unknown>
    let result: Outcome<T> | { refused: ApiError }
    try {
      const response = await work(trx)
      stored = response
      result = { replayed: false, response }
    } catch (error) {
      if (!isApiError(error) || error.statusCode >= 500) throw error
      await sql`rollback to savepoint ${sql.raw(WORK_SAVEPOINT)}`.execute(trx)
      stored = { status: error.statusCode, body: { code: error.code, message: error.message } satisfies StoredError }
      result = { refused: error }
    }
    // Ids and money are BigInts; they are stored as decimal strings and revived by the caller.
    await execute(trx, completeKey(trx, scope.userId, scope.key, stored.status, jsonWithBigInts(stored.body)))
    return result
  })
  if ('refused' in outcome) throw outcome.refused
  return outcome
}

const SWEEP_BATCH = 100

// The statements every keyed request runs, compiled once (db/compiled.ts).
const deleteExpiredKey = precompiled((db: Executor, userId: bigint, key: string, now: string) =>
  db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).where('expires_at', '<=', now))

const expiredIds = (db: Executor, now: string) =>
  db.selectFrom('idempotency_keys').select('id').where('expires_at', '<=', now).limit(SWEEP_BATCH)
const sweep = {
  sqlite: precompiled((db: Executor, now: string) => db.deleteFrom('idempotency_keys').where('id', 'in', expiredIds(db, now))),
  postgres: precompiled((db: Executor, now: string) => db.deleteFrom('idempotency_keys').where('id', 'in', expiredIds(db, now).forUpdate().skipLocked()))
}

const reserveKey = precompiled((db: Executor, userId: bigint, key: string, requestHash: string, now: string, expiresAt: string) =>
  db.insertInto('idempotency_keys')
    .values({ user_id: userId, key, request_hash: requestHash, state: 'IN_PROGRESS', created_at: now, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
    .returning('id'))

const completeKey = precompiled((db: Executor, userId: bigint, key: string, status: number, body: string) =>
  db.updateTable('idempotency_keys').set({ state: 'DONE', response_status: status, response_body: body })
    .where('user_id', '=', userId).where('key', '=', key))

/**
 * Deletes up to SWEEP_BATCH expired records of any user, so the table stays about one day of
 * keys deep without a separate job. On PostgreSQL rows locked by another transaction are
 * skipped (SKIP LOCKED): the sweep never waits, so it can never deadlock with another sweep.
 */
async function sweepExpired (trx: Transaction<Database>, dialect: DialectName, now: string): Promise<void> {
  await execute(trx, sweep[dialect](trx, now))
}

/** Inserts the caller's record; false when the key already has one (after waiting for its transaction). */
async function reserve (trx: Transaction<Database>, dialect: DialectName, scope: { userId: bigint, key: string, requestHash: string }, now: string, expiresAt: string): Promise<boolean> {
  const insert = async (): Promise<{ id: bigint } | undefined> =>
    (await execute(trx, reserveKey(trx, scope.userId, scope.key, scope.requestHash, now, expiresAt))).rows[0]
  if (dialect === 'sqlite') return await insert() !== undefined
  // PostgreSQL: wait for a concurrent holder of the key at most KEY_LOCK_TIMEOUT, then 409.
  await sql`set local lock_timeout = ${sql.lit(KEY_LOCK_TIMEOUT)}`.execute(trx)
  let row: { id: bigint } | undefined
  try {
    row = await insert()
  } catch (error) {
    if ((error as { code?: unknown }).code === '55P03') throw new ApiError('IDEMPOTENCY_KEY_IN_USE', { cause: error })
    throw error
  }
  await sql`set local lock_timeout to default`.execute(trx)
  return row !== undefined
}

async function existingOutcome<T> (trx: Transaction<Database>, scope: { userId: bigint, key: string, requestHash: string }): Promise<Outcome<T>> {
  const record = await trx.selectFrom('idempotency_keys').selectAll()
    .where('user_id', '=', scope.userId).where('key', '=', scope.key).executeTakeFirst()
  // Gone again (deleted between the two statements) or unfinished: neither can be seen while the
  // record is written in one transaction with the work, but a half-done record is never replayed.
  if (record === undefined) throw new ApiError('IDEMPOTENCY_KEY_IN_USE')
  if (record.request_hash !== scope.requestHash) throw new ApiError('IDEMPOTENCY_KEY_REUSED')
  if (record.state !== 'DONE' || record.response_status === null || record.response_body === null) {
    throw new ApiError('IDEMPOTENCY_KEY_IN_USE')
  }
  const status = Number(record.response_status)
  if (status >= 400) {
    const stored = JSON.parse(record.response_body) as StoredError
    throw new ApiError(stored.code, { message: stored.message, headers: { [REPLAYED_HEADER]: 'true' } })
  }
  return { replayed: true, status, body: record.response_body }
}
