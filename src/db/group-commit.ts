import type { ControlledTransaction, Kysely, Transaction } from 'kysely'
import type { Database } from './schema.js'
import { CommitFailed } from './errors.js'
import type { SqliteConnection } from './sqlite-connection.js'
import type { BatchScope } from './unit-trace.js'


// Group commit: how every write reaches a SQLite database.
//
// With `synchronous=FULL` a commit is a write of the WAL and an fsync, whatever it holds. Writes
// that arrive while one commit is being made therefore share the next one: each request's work
// (a *unit*) runs in its own SAVEPOINT inside one transaction, and one COMMIT makes them all
// durable. Only then is any of them answered, success or refusal: an answer never rests on a
// change that might still be rolled back.
//
// - A batch is what queued up while the previous one ran: the first unit to arrive schedules
//   the batch for the end of the event loop's current turn (setImmediate), so every request read
//   in that turn joins it; units that arrive while it runs join it too, up to 256 units or 10 ms
//   (`limits`), then it commits. There is no artificial delay: an idle service commits
//   a lone write at once.
// - Units run one after another, each seeing the batch's earlier units as if they had committed
//   before it: the outcome is that of the same requests run serially in that order (a
//   property test checks it). Every read outside a unit runs on the reader connection and sees
//   only what has committed (WAL), never a batch in progress.
// - A unit that throws is rolled back to its savepoint and rejected with its own error once the
//   batch has committed; the others are unaffected.
// - If SQLite ends the transaction itself (a full disk, an I/O error), or the COMMIT fails,
//   nothing of the batch is durable: every unit in it is rejected with CommitFailed (503), none
//   acknowledged. Units that had not started yet stay queued for the next batch.
//
// A unit must only run statements: anything slow it waited for (a password hash, a network
// call) would hold every other write. Such work is done before the unit is submitted.


/** The work of one request: its statements, run on the batch's transaction. */
export type Work<T> = (trx: Transaction<Database>) => Promise<T>

interface Unit {
  work: Work<unknown>
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  afterCommit: Array<() => void>
  outcome?: { ok: true, value: unknown } | { ok: false, error: unknown }
}

export class GroupCommit {
  readonly #writer: Kysely<Database>
  readonly #connection: SqliteConnection
  readonly #scope: BatchScope
  readonly #queue: Unit[] = []
  #scheduled = false
  #running = false
  #closed = false
  /** Resolved when the batch that is running ends. */
  #idle: (() => void) | undefined
  readonly #savepoint
  readonly #release
  readonly #rollbackTo
  /** Batches committed and units in them, for the bench and the tests. */
  readonly stats = { batches: 0, units: 0, largest: 0 }
  /** A batch takes no more units past either: the latency a unit can wait for the others is bounded. */
  readonly limits = { units: 256, ms: 10 }

  constructor (writer: Kysely<Database>, connection: SqliteConnection, scope: BatchScope) {
    this.#writer = writer
    this.#connection = connection
    this.#scope = scope
    this.#savepoint = connection.sqlite.prepare('savepoint unit')
    this.#release = connection.sqlite.prepare('release unit')
    this.#rollbackTo = connection.sqlite.prepare('rollback to unit')
  }

  /** Queues a unit; settles once the batch holding it has committed (or failed). */
  async submit<T> (work: Work<T>): Promise<T> {
    // The same words as a closed driver's, so the error handler answers 503.
    if (this.#closed) throw new Error('The database connection is not open')
    return await new Promise<T>((resolve, reject) => {
      this.#queue.push({ work: work as Work<unknown>, resolve: resolve as (value: unknown) => void, reject, afterCommit: [] })
      this.#schedule()
    })
  }

  #schedule (): void {
    if (this.#running || this.#scheduled || this.#queue.length === 0) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      void this.#batch()
    })
  }

  async #batch (): Promise<void> {
    this.#running = true
    const batch: Unit[] = []
    let trx: ControlledTransaction<Database> | undefined
    let failed: unknown
    try {
      try {
        trx = await this.#writer.startTransaction().execute()
      } catch (error) {
        // No transaction (the file locked by another process past the busy timeout, say): the
        // units that would have made this batch get the failure instead of waiting on.
        batch.push(...this.#queue.splice(0, this.limits.units))
        throw error
      }
      const started = performance.now()
      while (this.#queue.length > 0 && batch.length < this.limits.units && performance.now() - started < this.limits.ms) {
        const unit = this.#queue.shift()!
        batch.push(unit)
        this.#savepoint.run()
        this.#scope.enter(trx, (callback) => { unit.afterCommit.push(callback) })
        try {
          unit.outcome = { ok: true, value: await unit.work(trx) }
          this.#release.run()
        } catch (error) {
          unit.outcome = { ok: false, error }
          // SQLite may have ended the transaction itself (a full disk, an I/O error): then the
          // batch so far is gone, and so is the savepoint.
          if (!this.#connection.sqlite.inTransaction) throw error
          this.#rollbackTo.run()
          this.#release.run()
        } finally {
          this.#scope.leave(trx)
        }
      }
      await trx.commit().execute()
    } catch (error) {
      failed = error
      if (trx !== undefined && this.#connection.sqlite.inTransaction) await trx.rollback().execute().catch(() => {})
    }
    this.#running = false
    if (failed === undefined) {
      this.stats.batches += 1
      this.stats.units += batch.length
      this.stats.largest = Math.max(this.stats.largest, batch.length)
    }
    for (const unit of batch) {
      const { outcome } = unit
      if (failed !== undefined) unit.reject(new CommitFailed(failed))
      else if (outcome?.ok === true) {
        for (const callback of unit.afterCommit) callback()
        unit.resolve(outcome.value)
      } else unit.reject(outcome?.error)
    }
    // The queue's next batch: what arrived meanwhile, and whatever the next turn of the event loop reads.
    this.#schedule()
    if (!this.busy) this.#idle?.()
  }

  /** Runs what is queued, then takes no more units (the database is closing). */
  async close (): Promise<void> {
    this.#closed = true
    while (this.busy) await new Promise<void>((resolve) => { this.#idle = resolve })
  }

  /** Units waiting for a batch (the tests look at a batch in progress). */
  get queued (): number {
    return this.#queue.length
  }

  /** Whether a batch is open or waiting to run. */
  get busy (): boolean {
    return this.#running || this.#scheduled
  }
}
