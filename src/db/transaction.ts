import type { Transaction } from 'kysely'
import type { Database, Db, Executor } from './schema.js'

// Every transaction of the service is opened here (the lint refuses `db.transaction()`
// anywhere else in src/), so that a transaction can be traced back to the database handle it
// was opened on. A Kysely transaction is a fresh object each time; the
// hot queries compiled once per handle (db/compiled.ts) find the handle's compiled form
// through it, instead of building and compiling the query again in every transaction, which
// cost more than running the whole transaction's statements (docs/decisions.md, Performance).

const handles = new WeakMap<Executor, Db>()

/** Runs `work` in one transaction: committed when it returns, rolled back when it throws. */
export async function inTransaction<T> (db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  let committed: Array<() => void> | undefined
  const result = await db.transaction().execute(async (trx) => {
    handles.set(trx, db)
    try {
      return await work(trx)
    } finally {
      // A transaction kept past its end is no longer traced to the handle: Kysely then refuses
      // its queries, and none runs on the connection directly (db/compiled.ts).
      handles.delete(trx)
      committed = afterCommits.get(trx)
      afterCommits.delete(trx)
    }
  })
  // Reached only once the COMMIT has succeeded.
  for (const callback of committed ?? []) callback()
  return result
}

const afterCommits = new WeakMap<Executor, Array<() => void>>()

/**
 * Runs `callback` once the transaction commits (never when it rolls back); outside a
 * transaction, at once.
 */
export function afterCommit (executor: Executor, callback: () => void): void {
  if (!executor.isTransaction) { callback(); return }
  const callbacks = afterCommits.get(executor)
  if (callbacks === undefined) afterCommits.set(executor, [callback])
  else callbacks.push(callback)
}

/** The database handle an executor runs on: itself, or the handle a transaction was opened on (undefined when it was opened elsewhere). */
export function handleOf (executor: Executor): Db | undefined {
  return executor.isTransaction ? handles.get(executor) : executor as Db
}
