import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './schema.js'
import { SqliteConnection } from './sqlite-connection.js'
import { statementName } from './statement-names.js'

export type DialectName = 'sqlite' | 'postgres'

export interface DatabaseHandle {
  db: Kysely<Database>
  dialect: DialectName
}

// SQLite's own page cache, per connection. better-sqlite3 raises SQLite's default to 16 MiB, which
// a read-heavy process on a large file fills within minutes: that is a tenth of the memory the
// service is meant to stay within. The operating system caches the file as well, so a page
// missing here costs a read() from memory, not from the disk (the B-tree's inner pages, the
// ones every lookup passes, stay here).
const SQLITE_CACHE_KIB = 4096

function openSqlite (path: string): Kysely<Database> {
  const file = resolve(path)
  mkdirSync(dirname(file), { recursive: true })
  const sqlite = new SqliteDatabase(file)
  // Every integer is read as a BigInt so 64-bit ids are exact (see db/types.ts).
  sqlite.defaultSafeIntegers(true)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = FULL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('busy_timeout = 5000')
  sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`)
  const connection = new SqliteConnection(sqlite)
  const db = new Kysely<Database>({ dialect: connection.dialect() })
  sqliteConnections.set(db, connection)
  return db
}

const sqliteConnections = new WeakMap<Kysely<Database>, SqliteConnection>()

/** The SQLite connection under a database handle; undefined on PostgreSQL. */
export function sqliteConnectionOf (db: Kysely<Database>): SqliteConnection | undefined {
  return sqliteConnections.get(db)
}

const INT8_OID = 20

// How long a query may run: the server stops it first (statement_timeout, a clean error on a
// usable connection); the client gives up a little later (query_timeout), for the case where the
// server cannot answer at all (a frozen host, a network that drops packets silently).
export const STATEMENT_TIMEOUT_MS = 4000
export const QUERY_TIMEOUT_MS = 5000
const CONNECT_TIMEOUT_MS = 3000

/**
 * A pg client that never lets a connection failure escape as a process-level error.
 *
 * pg emits 'error' on a client whose socket dies. The pool listens only while the client is
 * idle; a client checked out by a request (between two queries of a transaction, say) would
 * emit with no listener, which crashes the process. The listener is attached here, for the
 * client's whole life; the request that holds the client then sees its next query fail
 * ("not queryable"), which the error handler answers with 503.
 *
 * A client-side timeout leaves the query sent and the connection waiting for an answer that
 * may never come; every later query on it would queue behind. So the connection is destroyed:
 * the transaction's ROLLBACK fails at once instead of waiting in turn, and the pool replaces it.
 *
 * With `preparedStatements`, the hot queries go as named prepared statements (see
 * db/statement-names.ts); node-postgres parses each once per connection and remembers it.
 */
function guardedClient (preparedStatements: boolean): typeof pg.Client {
  return class GuardedClient extends pg.Client {
    constructor (config?: string | pg.ClientConfig) {
      super(config)
      this.on('error', () => {})
    }

    override query (...args: unknown[]): any {
      // A hot query's text (db/statement-names.ts) goes as a named prepared statement.
      const [text, values] = args
      const name = preparedStatements && args.length === 2 && typeof text === 'string' && Array.isArray(values) ? statementName(text) : undefined
      const result = (super.query as (...a: unknown[]) => unknown)(...(name === undefined ? args : [{ name, text, values }]))
      if (result instanceof Promise) {
        result.catch((error: unknown) => {
          if (error instanceof Error && error.message === 'Query read timeout') {
            (this as unknown as { connection: { stream: { destroy: () => void } } }).connection.stream.destroy()
          }
        })
      }
      return result
    }
  }
}

function openPostgres (url: string, limits: boolean, preparedStatements: boolean): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    Client: guardedClient(preparedStatements),
    max: 10,
    // A database that cannot be reached must give a quick 503, never a hanging request. This
    // also bounds the wait for a free client when every one is busy.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30000,
    ...(limits ? { statement_timeout: STATEMENT_TIMEOUT_MS, query_timeout: QUERY_TIMEOUT_MS } : {}),
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
    }
  })
  // An idle client losing its connection also emits 'error' on the pool; without a listener
  // that would crash the process. The next query reports the outage instead.
  pool.on('error', () => {})
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
}

export interface OpenOptions {
  /**
   * PostgreSQL: false drops the statement and query time limits, for schema migrations only:
   * building an index on a large table may take minutes, where a request's query must not take
   * seconds.
   */
  queryLimits?: boolean
  /**
   * PostgreSQL: false sends the hot queries unnamed too (PG_PREPARED_STATEMENTS=false), for a
   * pooler that cannot keep a connection's prepared statements (PgBouncer before 1.21 in
   * transaction mode).
   */
  preparedStatements?: boolean
}

/** Opens the database named by DATABASE_URL. */
export function openDatabase (databaseUrl: string, { queryLimits = true, preparedStatements = true }: OpenOptions = {}): DatabaseHandle {
  if (databaseUrl.startsWith('file:')) {
    return { db: openSqlite(databaseUrl.slice('file:'.length)), dialect: 'sqlite' }
  }
  return { db: openPostgres(databaseUrl, queryLimits, preparedStatements), dialect: 'postgres' }
}
