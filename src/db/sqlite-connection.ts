import type SqliteDatabase from 'better-sqlite3'
import { CompiledQuery, SqliteDialect, SqliteQueryCompiler, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type SqliteDatabase as SqliteDialectDatabase } from 'kysely'

// A SQLite connection, shared by Kysely and by the hot queries' direct path. The service opens
// two on its file (db/database.ts): the writer, on which the group commit runs every write
// (db/group-commit.ts), and the reader, on which everything else reads the last committed state.
//
// Kysely reaches a better-sqlite3 statement through a chain of promises: a mutex around the
// connection, a connection provider per transaction, the executor and its result transform,
// each an await. better-sqlite3 itself is synchronous. On a PATCH, which runs six statements,
// that chain cost 31k instructions, about a seventh of the service's work beyond the floor's
// (docs/decisions.md, Performance). So a precompiled query (db/compiled.ts) runs here at once:
// on the reader, which no transaction ever holds, and on the writer inside the group commit's
// transaction, which holds it for its whole batch. The SQL, its parameters and the result's
// shape are Kysely's own (its SqliteConnection).

// Kysely's SQLite driver calls prepare() for every statement it runs, which parses and plans
// the SQL again each time (it was the largest single cost of a cached read in the profile).
// The statements are cached here by their SQL text instead: the service runs a few dozen
// distinct texts, and the bound on the cache only guards against a caller building SQL with
// literal values. A statement is synchronous in better-sqlite3 (all/get/run finish before the
// next one starts), so one prepared statement can serve every caller; only one that is still
// being iterated is busy, and then a fresh one is prepared.
const STATEMENT_CACHE_SIZE = 500

// The precompiled queries (run, first) have statements of their own, which nothing else is
// handed and nothing iterates: never busy, so never asked. better-sqlite3's `busy` and `reader`
// are native getters that V8 reaches through its runtime, about 0.6 µs each on a read by id
// (perf); a statement's `reader` never changes, so it is read once, when it is prepared.
interface OwnStatement { statement: SqliteDatabase.Statement, reader: boolean }

/** Sets `key` in a cache of at most STATEMENT_CACHE_SIZE entries, forgetting the oldest when full. */
function remember<V> (cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
  cache.set(key, value)
}

export class SqliteConnection {
  readonly #sqlite: SqliteDatabase.Database
  readonly #statements = new Map<string, SqliteDatabase.Statement>()
  readonly #own = new Map<string, OwnStatement>()

  constructor (sqlite: SqliteDatabase.Database) {
    this.#sqlite = sqlite
  }

  /** better-sqlite3's own handle (the group commit's SAVEPOINT statements, `inTransaction`). */
  get sqlite (): SqliteDatabase.Database {
    return this.#sqlite
  }

  prepare (sql: string): SqliteDatabase.Statement {
    let statement = this.#statements.get(sql)
    if (statement === undefined || statement.busy) {
      statement = this.#sqlite.prepare(sql)
      remember(this.#statements, sql, statement)
    }
    return statement
  }

  /** The precompiled queries' own statement of this SQL, prepared at its first use. */
  #ownStatement (sql: string): OwnStatement {
    let own = this.#own.get(sql)
    if (own === undefined) {
      const statement = this.#sqlite.prepare(sql)
      own = { statement, reader: statement.reader }
      remember(this.#own, sql, own)
    }
    return own
  }

  /** Runs a compiled query now; the result is what Kysely's executeQuery would resolve to. */
  run<R> (query: CompiledQuery<R>): QueryResult<R> {
    const { statement, reader } = this.#ownStatement(query.sql)
    if (reader) return { rows: statement.all(query.parameters) as R[] }
    const { changes, lastInsertRowid } = statement.run(query.parameters)
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
  }

  /**
   * The first row of a compiled query that returns rows, run now: one step of the statement
   * rather than all of them into an array (a read by id has one row or none). A write that
   * returns rows makes all its changes in that first step, as SQLite documents for RETURNING.
   */
  first<R> (query: CompiledQuery<R>): R | undefined {
    return this.#ownStatement(query.sql).statement.get(query.parameters) as R | undefined
  }

  /** The Kysely dialect over this connection; `beforeDestroy` runs when Kysely is destroyed, before the connection closes. */
  dialect (beforeDestroy?: () => Promise<void>): SqliteDialect {
    const database: SqliteDialectDatabase = {
      close: () => { this.#sqlite.close() },
      prepare: (sql) => this.prepare(sql)
    }
    return new ConnectionDialect({ database }, beforeDestroy)
  }
}

class ConnectionDialect extends SqliteDialect {
  readonly #beforeDestroy: (() => Promise<void>) | undefined

  constructor (config: ConstructorParameters<typeof SqliteDialect>[0], beforeDestroy?: () => Promise<void>) {
    super(config)
    this.#beforeDestroy = beforeDestroy
  }

  override createDriver (): Driver {
    const driver = super.createDriver()
    const beforeDestroy = this.#beforeDestroy
    if (beforeDestroy !== undefined) {
      const destroy = driver.destroy.bind(driver)
      driver.destroy = async () => {
        await beforeDestroy()
        await destroy()
      }
    }
    // Kysely's SQLite driver opens transactions with a plain (deferred) BEGIN. A deferred
    // transaction that reads and then writes can fail with SQLITE_BUSY when another process
    // holds the write lock, and busy_timeout cannot help it; BEGIN IMMEDIATE takes the write
    // lock up front, so the busy timeout applies and writers queue instead of failing.
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'))
    }
    return driver
  }

  override createQueryCompiler (): QueryCompiler {
    return new FixedPlanQueryCompiler()
  }
}

// better-sqlite3 builds SQLite with STAT4. Once ANALYZE has run (an operator's routine, and the
// benchmark's), SQLite plans some statements by the values of their parameters (one compared
// with an indexed column, a range on the primary key, a LIMIT) and marks such a statement to be
// planned again whenever the parameter is bound anew; better-sqlite3 binds every parameter on
// every run, so the statement was parsed and planned again on every request. Measured on the
// benchmark's data: a session lookup took 20 µs instead of 7, a page of posts 75–83 µs instead
// of 60–63 (docs/decisions.md, Performance).
// Every parameter is therefore written `+?`. SQLite's unary plus returns its operand unchanged
// (the same value and type, and like a bare parameter it has no affinity), and the planner does
// not look through it at the bound value. The service's plans do not depend on those values:
// the same index is the right one for every token, id and page size.
class FixedPlanQueryCompiler extends SqliteQueryCompiler {
  protected override getCurrentParameterPlaceholder (): string {
    return '+?'
  }
}
