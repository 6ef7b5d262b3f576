import type SqliteDatabase from 'better-sqlite3'
import { CompiledQuery, SqliteDialect, SqliteQueryCompiler, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type SqliteDatabase as SqliteDialectDatabase } from 'kysely'

// The service's one SQLite connection, shared by Kysely and by the hot queries' direct path.
//
// Kysely reaches a better-sqlite3 statement through a chain of promises: a mutex around the
// connection, a connection provider per transaction, the executor and its result transform,
// each an await. better-sqlite3 itself is synchronous. On a PATCH, which runs six statements,
// that chain cost 31k instructions, about a seventh of the service's work beyond the floor's
// (docs/decisions.md, Performance).
// So a precompiled query (db/compiled.ts) runs here at once, on the same connection, when
// that is exactly what Kysely would have done:
// - inside a transaction opened by inTransaction, which holds the connection until it ends;
// - outside one, when no one holds the connection. When a transaction does hold it, the query
//   goes through Kysely and waits its turn, as before: run now, it would run inside another
//   request's transaction and see (or, on a rollback, lose) writes not yet committed.
// The SQL, its parameters and the result's shape are Kysely's own (its SqliteConnection).

// Kysely's SQLite driver calls prepare() for every statement it runs, which parses and plans
// the SQL again each time (it was the largest single cost of a cached read in the profile).
// The statements are cached here by their SQL text instead: the service runs a few dozen
// distinct texts, and the bound on the cache only guards against a caller building SQL with
// literal values. A statement is synchronous in better-sqlite3 (all/get/run finish before the
// next one starts), so one prepared statement can serve every caller; only one that is still
// being iterated is busy, and then a fresh one is prepared.
const STATEMENT_CACHE_SIZE = 500

export class SqliteConnection {
  readonly #sqlite: SqliteDatabase.Database
  readonly #statements = new Map<string, SqliteDatabase.Statement>()
  /** better-sqlite3's transaction wrapper, made once: its `immediate` runs a function in BEGIN IMMEDIATE … COMMIT. */
  readonly #transaction: SqliteDatabase.Transaction<(work: () => unknown) => unknown>
  /** Whether Kysely holds the connection (a transaction, or one of its own queries, is running). */
  #held = false

  constructor (sqlite: SqliteDatabase.Database) {
    this.#sqlite = sqlite
    this.#transaction = sqlite.transaction((work: () => unknown) => work())
  }

  get held (): boolean {
    return this.#held
  }

  prepare (sql: string): SqliteDatabase.Statement {
    let statement = this.#statements.get(sql)
    if (statement === undefined || statement.busy) {
      statement = this.#sqlite.prepare(sql)
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.delete(this.#statements.keys().next().value!)
      this.#statements.set(sql, statement)
    }
    return statement
  }

  /** Runs a compiled query now; the result is what Kysely's executeQuery would resolve to. */
  run<R> (query: CompiledQuery<R>): QueryResult<R> {
    const statement = this.prepare(query.sql)
    if (statement.reader) return { rows: statement.all(query.parameters) as R[] }
    const { changes, lastInsertRowid } = statement.run(query.parameters)
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
  }

  /**
   * Runs `work`, which runs statements with run(), in one transaction: BEGIN IMMEDIATE, the
   * statements, COMMIT (ROLLBACK if it throws), all before this returns, with no turn of the
   * event loop in between, so nothing else can run on the connection meanwhile. Only while no
   * one holds the connection: a transaction of Kysely's would otherwise have these statements
   * run inside it. It costs two statements, where a transaction opened through Kysely
   * (db/transaction.ts) also costs its chain of promises and objects.
   */
  transaction<T> (work: () => T): T {
    if (this.#held) throw new Error('SqliteConnection.transaction: the connection is held by a transaction of Kysely\'s')
    return this.#transaction.immediate(work) as T
  }

  /** The Kysely dialect over this connection. */
  dialect (): SqliteDialect {
    const database: SqliteDialectDatabase = {
      close: () => { this.#sqlite.close() },
      prepare: (sql) => this.prepare(sql)
    }
    return new ConnectionDialect({ database }, (held) => { this.#held = held })
  }
}

class ConnectionDialect extends SqliteDialect {
  readonly #setHeld: (held: boolean) => void

  constructor (config: ConstructorParameters<typeof SqliteDialect>[0], setHeld: (held: boolean) => void) {
    super(config)
    this.#setHeld = setHeld
  }

  override createDriver (): Driver {
    const driver = super.createDriver()
    const acquire = driver.acquireConnection.bind(driver)
    const release = driver.releaseConnection.bind(driver)
    // Marked held once Kysely's mutex is taken, and free again before it is given back: the
    // marks sit inside the locked span, so no transaction's statements run while it reads free.
    driver.acquireConnection = async () => {
      const connection = await acquire()
      this.#setHeld(true)
      return connection
    }
    driver.releaseConnection = async (connection: DatabaseConnection) => {
      this.#setHeld(false)
      await release(connection)
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
