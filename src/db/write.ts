import type { Transaction } from 'kysely'
import { groupCommitOf } from './database.js'
import type { BatchScope, Work } from './group-commit.js'
import type { Database, Db, Executor } from './schema.js'

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
// src/). A transaction is traced back to the database handle it belongs to, so the hot queries
// compiled once per handle (db/compiled.ts) are not built again in every unit; and callbacks
// registered with afterCommit run once the unit's changes are durable, never when it fails.

const handles = new WeakMap<Executor, Db>()
const afterCommits = new WeakMap<Executor, (callback: () => void) => void>()

/** Runs `work` as one unit: its statements are committed together, or not at all. Inside a unit, joins it. */
export async function write<T> (db: Db, work: Work<T>): Promise<T> {
  if (db.isTransaction) return await work(db as Transaction<Database>)
  const group = groupCommitOf(db)
  if (group !== undefined) return await group.submit(work)
  const committed: Array<() => void> = []
  const result = await db.transaction().execute(async (trx) => {
    handles.set(trx, db)
    afterCommits.set(trx, (callback) => { committed.push(callback) })
    try {
      return await work(trx)
    } finally {
      // A transaction kept past its end is no longer traced to the handle: Kysely then refuses
      // its queries, and none runs on a connection directly (db/compiled.ts).
      handles.delete(trx)
      afterCommits.delete(trx)
    }
  })
  // Reached only once the COMMIT has succeeded.
  for (const callback of committed) callback()
  return result
}

/** How the group commit traces its batch's transaction to `db`, unit by unit. */
export function batchScope (db: Db): BatchScope {
  return {
    enter: (trx, afterCommit) => {
      handles.set(trx, db)
      afterCommits.set(trx, afterCommit)
    },
    leave: (trx) => {
      handles.delete(trx)
      afterCommits.delete(trx)
    }
  }
}

/**
 * Runs `callback` once the unit the executor belongs to is durable (never when it fails);
 * outside a unit (a statement that committed by itself), at once.
 */
export function afterCommit (executor: Executor, callback: () => void): void {
  const register = afterCommits.get(executor)
  if (register === undefined) callback()
  else register(callback)
}

/** The database handle an executor runs on: itself, or the handle of the unit a transaction belongs to (undefined for any other transaction). */
export function handleOf (executor: Executor): Db | undefined {
  return executor.isTransaction ? handles.get(executor) : executor as Db
}
