import type { Transaction } from 'kysely'
import { groupCommitOf } from './database.js'
import type { Work } from './group-commit.js'
import type { Database, Db, Executor } from './schema.js'
import { batchScope, tracedHandle } from './unit-trace.js'

// Tracing a unit to its handle and its after-commit callbacks lives in unit-trace.ts.
export { afterCommit } from './unit-trace.js'

// Every write of the service is a unit of work handed to one committer: `write(db, work)`.
// `work` runs its statements on the transaction it is given and returns; the promise settles
// once they are durable (or have been rolled back, with the error).
//
// - SQLite: the group commit (db/group-commit.ts). Units that arrive together share one
//   transaction, each in its own savepoint, and one COMMIT.
// - PostgreSQL: a transaction of its own (PostgreSQL already groups the fsyncs of concurrent
//   commits). A write that is one statement may skip the transaction (writeStatement in
//   db/compiled.ts, writeWithEvents in events/recorded-write.ts): a single statement is atomic.
//
// Only this file opens transactions (the lint refuses `db.transaction()` anywhere else in
// src/). A unit's transaction is traced back to the database handle it belongs to
// (unit-trace.ts), and callbacks registered with afterCommit run once the unit's changes are
// durable, never when it fails.

/** Runs `work` as one unit: its statements are committed together, or not at all. Inside a unit, joins it. */
export async function write<T> (db: Db, work: Work<T>): Promise<T> {
  if (db.isTransaction) return await work(db as Transaction<Database>)
  const group = groupCommitOf(db)
  if (group !== undefined) return await group.submit(work)
  const committed: Array<() => void> = []
  const scope = batchScope(db)
  const result = await db.transaction().execute(async (trx) => {
    scope.enter(trx, (callback) => { committed.push(callback) })
    try {
      return await work(trx)
    } finally {
      scope.leave(trx)
    }
  })
  // Reached only once the COMMIT has succeeded.
  for (const callback of committed) callback()
  return result
}

/** The database handle an executor runs on: itself, or the handle of the unit a transaction belongs to (undefined for any other transaction). */
export function handleOf (executor: Executor): Db | undefined {
  return tracedHandle(executor) as Db | undefined
}
