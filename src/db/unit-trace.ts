import type { Kysely, Transaction } from 'kysely'

// A unit of work's transaction traced back to the database handle it belongs to, and to the
// callbacks to run once the unit is durable. Kept apart from the committer (write.ts) and the
// handle (database.ts), which both trace units, so that neither imports the other for it: this
// module imports nothing of db/.
//
// The hot queries compiled once per handle (compiled.ts) find their handle through the trace,
// so they are not built again in every unit; a transaction kept past its unit's end is no longer
// traced, so Kysely then refuses its queries and none runs on a connection directly.

/** How a committer traces a unit's transaction while the unit runs: `enter` before its work, `leave` after. */
export interface BatchScope {
  enter: (trx: Transaction<any>, afterCommit: (callback: () => void) => void) => void
  leave: (trx: Transaction<any>) => void
}

const handles = new WeakMap<object, Kysely<any>>()
const afterCommits = new WeakMap<object, (callback: () => void) => void>()

/** The scope that traces units' transactions to `db`. */
export function batchScope (db: Kysely<any>): BatchScope {
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
export function afterCommit (executor: Kysely<any>, callback: () => void): void {
  const register = afterCommits.get(executor)
  if (register === undefined) callback()
  else register(callback)
}

/** The database handle an executor runs on: itself, or the handle of the unit a transaction belongs to (undefined for any other transaction). */
export function tracedHandle (executor: Kysely<any>): Kysely<any> | undefined {
  return executor.isTransaction ? handles.get(executor) : executor
}
