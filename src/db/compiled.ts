import type { Compilable, CompiledQuery, QueryResult } from 'kysely'
import { postgresPoolOf, runOnPool, sqliteHandleOf } from './database.js'
import type { Db, Executor } from './schema.js'
import type { SqliteConnection } from './sqlite-connection.js'
import { nameStatement } from './statement-names.js'
import { handleOf, write } from './write.js'

// Building a Kysely query and compiling it to SQL costs more than running it on a warm
// database: in the profile of a cached read it was about a tenth of the time. A hot query of a
// fixed shape is therefore built and compiled once per database handle, with marker objects
// where its values go, and afterwards only its parameter list is made anew: the values are put
// where the markers were. A constant the builder itself adds (a `+ 1`) keeps its place.
// Each distinct shape (with or without a cursor, say) is its own precompiled query.
// A unit of work (db/write.ts) uses the compiled form of the handle it belongs to: the SQL is
// the same, only the connection differs. (A transaction opened any other way compiles the query
// as usual.) On PostgreSQL the text then runs as a named prepared statement, parsed and planned
// once per connection (db/statement-names.ts). A precompiled query is run with execute (below),
// on SQLite straight on the connection.

interface Entry<R> {
  query: CompiledQuery<R>
  slots: number[]
  /** Whether the parameters are the arguments themselves, in order (the call's argument list is then the parameter list). */
  inOrder: boolean
}

export function precompiled<A extends unknown[], R> (build: (db: Executor, ...args: A) => Compilable<R>): (db: Executor, ...args: A) => CompiledQuery<R> {
  const cache = new WeakMap<Executor, Entry<R>>()
  return (db, ...args) => {
    const handle = handleOf(db)
    if (handle === undefined) return build(db, ...args).compile()
    let entry = cache.get(handle)
    if (entry === undefined) {
      const markers = args.map((_, i) => ({ precompiledArgument: i }))
      const query = build(db, ...(markers as unknown as A)).compile()
      const slots = query.parameters.map((p) => markers.indexOf(p as { precompiledArgument: number }))
      // Every argument must become a parameter; one that the builder turned into SQL text (or
      // dropped) would make every later call run with the first call's markers.
      if (!args.every((_, i) => slots.includes(i))) throw new Error('precompiled: an argument did not become a parameter')
      entry = { query, slots, inOrder: slots.length === args.length && slots.every((slot, i) => slot === i) }
      cache.set(handle, entry)
      nameStatement(query.sql)
    }
    const { query, slots } = entry
    // A literal of the compiled query's four members rather than a spread of it: the spread
    // copied them through the runtime's generic object clone on every call of a hot read.
    return {
      query: query.query,
      queryId: query.queryId,
      sql: query.sql,
      parameters: entry.inOrder ? args : slots.map((slot, i) => slot === -1 ? query.parameters[i] : args[slot])
    }
  }
}

/**
 * Runs a precompiled query on an executor. On SQLite it runs at once on the connection: the
 * writer inside a unit of work (the group commit's transaction), the reader otherwise (see
 * db/sqlite-connection.ts). On PostgreSQL, outside a transaction, it runs on a pooled connection
 * without Kysely's promise chain (runOnPool in db/database.ts). Otherwise it runs through Kysely.
 */
export async function execute<R> (executor: Executor, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  const handle = handleOf(executor)
  if (handle === undefined) return await executor.executeQuery(query)
  const sqlite = sqliteConnectionOf(handle, executor)
  if (sqlite !== undefined) return sqlite.run(query)
  const pool = executor.isTransaction ? undefined : postgresPoolOf(handle)
  return pool === undefined ? await executor.executeQuery(query) : await runOnPool(pool, query)
}

/** The SQLite connection a precompiled query runs on at once: the writer inside a unit of work, the reader otherwise; undefined on PostgreSQL. */
function sqliteConnectionOf (handle: Db | undefined, executor: Executor): SqliteConnection | undefined {
  const sqlite = handle === undefined ? undefined : sqliteHandleOf(handle)
  return sqlite === undefined ? undefined : executor.isTransaction ? sqlite.writer : sqlite.reader
}

/**
 * The first row of a precompiled query: the row itself on SQLite, which answers at once, so
 * that no promise stands between the statement and its use (the fast reads,
 * pipeline/fast-reads.ts: about 5 µs of CPU a read); a promise of it on PostgreSQL.
 */
export function firstRowSoon<R> (executor: Executor, query: CompiledQuery<R>): R | undefined | Promise<R | undefined> {
  const sqlite = sqliteConnectionOf(handleOf(executor), executor)
  return sqlite !== undefined ? sqlite.first(query) : execute(executor, query).then((result) => result.rows[0])
}

/** The rows of a precompiled query: at once on SQLite, a promise of them on PostgreSQL (as firstRowSoon). */
export function rowsSoon<R> (executor: Executor, query: CompiledQuery<R>): R[] | Promise<R[]> {
  const sqlite = sqliteConnectionOf(handleOf(executor), executor)
  return sqlite !== undefined ? sqlite.run(query).rows : execute(executor, query).then((result) => result.rows)
}

/** `then` of a value that may be at hand already: `next` of it at once, or of its promise when it is one. */
export function soon<T, U> (value: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(next) : next(value)
}

/**
 * A write that is one statement, as a unit of work: on SQLite through the group commit; on
 * PostgreSQL on its own, without a transaction around it (one statement is atomic; BEGIN and
 * COMMIT would be two more round trips).
 */
export async function writeStatement<R> (db: Db, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  if (db.isTransaction || sqliteHandleOf(db) !== undefined) return await write(db, async (trx) => await execute(trx, query))
  return await execute(db, query)
}
