import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, PostgresDialect, type CompiledQuery, type QueryResult } from 'kysely'
import type pg from 'pg'
import { CommitNotReplicated, QueryReadTimeout } from './errors.js'
import type { Database } from './schema.js'
import { GroupCommit } from './group-commit.js'
import { pgModule } from './pg-module.js'
import { SqliteConnection } from './sqlite-connection.js'
import { batchScope } from './unit-trace.js'
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

/** The absolute path of the SQLite file a `file:` DATABASE_URL names. */
export function sqliteFile (databaseUrl: string): string {
  return resolve(databaseUrl.slice('file:'.length))
}

/** Opens a connection to the file with the settings every connection of the service has. */
function sqliteConnection (file: string): SqliteDatabase.Database {
  const sqlite = new SqliteDatabase(file)
  // Every integer is read as a BigInt so 64-bit ids are exact (see db/types.ts).
  sqlite.defaultSafeIntegers(true)
  sqlite.pragma('busy_timeout = 5000')
  sqlite.pragma(`cache_size = -${SQLITE_CACHE_KIB}`)
  return sqlite
}

/**
 * SQLite: two connections on the file. The writer runs every write, through the group commit
 * (db/group-commit.ts); the reader runs every other query and, the file being in WAL mode, sees
 * the last committed state, never a batch in progress. The reader is `query_only`: a write that
 * went around the group commit would otherwise wait on the writer's lock in the same thread.
 * The handle returned is the reader's; destroying it finishes the group commit's work and closes both.
 */
function openSqlite (file: string, replicated: boolean): Kysely<Database> {
  mkdirSync(dirname(file), { recursive: true })
  const writerSqlite = sqliteConnection(file)
  writerSqlite.pragma('journal_mode = WAL')
  writerSqlite.pragma('synchronous = FULL')
  writerSqlite.pragma('foreign_keys = ON')
  // Under replication (BACKUP_URL) Litestream makes the checkpoints, at its own moments: a
  // checkpoint of the service's could reset the WAL before Litestream has copied it, which makes
  // it start a new generation with a full snapshot. (While Litestream runs, its read lock keeps
  // a checkpoint from resetting the WAL anyway; this covers the moments it is being restarted.)
  if (replicated) writerSqlite.pragma('wal_autocheckpoint = 0')
  const writer = new SqliteConnection(writerSqlite)
  const writerDb = new Kysely<Database>({ dialect: writer.dialect() })
  const readerSqlite = sqliteConnection(file)
  readerSqlite.pragma('query_only = ON')
  const reader = new SqliteConnection(readerSqlite)
  const closing: { group?: GroupCommit } = {}
  const db = new Kysely<Database>({
    dialect: reader.dialect(async () => {
      await closing.group?.close()
      await writerDb.destroy()
    })
  })
  const group = new GroupCommit(writerDb, writer, batchScope(db))
  closing.group = group
  sqliteHandles.set(db, { reader, writer, writerDb, group })
  return db
}

interface SqliteHandle {
  reader: SqliteConnection
  writer: SqliteConnection
  /** Kysely on the writer: the group commit's, and the schema migrations' (run before anything else writes). */
  writerDb: Kysely<Database>
  group: GroupCommit
}
const sqliteHandles = new WeakMap<Kysely<Database>, SqliteHandle>()

/** The SQLite connections and group commit under a database handle; undefined on PostgreSQL. */
export function sqliteHandleOf (db: Kysely<Database>): SqliteHandle | undefined {
  return sqliteHandles.get(db)
}

/** The database a handle opened by openDatabase runs on. */
export function dialectOfHandle (db: Kysely<Database>): DialectName {
  return sqliteHandles.has(db) ? 'sqlite' : 'postgres'
}

/** The group commit that runs a SQLite handle's writes; undefined on PostgreSQL. */
export function groupCommitOf (db: Kysely<Database>): GroupCommit | undefined {
  return sqliteHandles.get(db)?.group
}

const INT8_OID = 20

// How long a query may run: the server stops it first (statement_timeout, a clean error on a
// usable connection); the client gives up a little later, for the case where the server cannot
// answer at all (a frozen host, a network that drops packets silently).
export const STATEMENT_TIMEOUT_MS = 4000
export const QUERY_TIMEOUT_MS = 5000
const CONNECT_TIMEOUT_MS = 3000

type QueryCallback = (error: Error | null, result: pg.QueryResult) => void

/**
 * A pg client that never lets a connection failure escape as a process-level error.
 *
 * pg emits 'error' on a client whose socket dies. The pool listens only while the client is
 * idle; a client checked out by a request (between two queries of a transaction, say) would
 * emit with no listener, which crashes the process. The listener is attached here, for the
 * client's whole life; the request that holds the client then sees its next query fail
 * ("not queryable"), which the error handler answers with 503.
 *
 * Every query of the service comes through Kysely as `query(text, values)`, answered by a
 * promise. It is passed on to pg in pg's callback form, with the client-side time limit kept
 * here rather than pg's `query_timeout`. Both are about memory, measured (docs/decisions.md, Performance):
 * pg's promise form and pg's per-query timer each made the rows of every query outlive two
 * young-generation collections, so they were copied twice and then moved to the old generation,
 * a tenth of a list page's time on PostgreSQL. The timer here holds only the socket.
 *
 * When the time limit passes, the connection is destroyed, not only the query failed: the query
 * was sent and the connection would wait for its answer, with every later query queued behind;
 * destroyed, it fails the query and anything queued at once (the transaction's ROLLBACK too), and
 * the pool replaces it.
 *
 * With `preparedStatements`, the hot queries go as named prepared statements (see
 * db/statement-names.ts); node-postgres parses each once per connection and remembers it.
 */
export function guardedClient (preparedStatements: boolean, queryTimeoutMs: number | undefined): typeof pg.Client {
  return class GuardedClient extends pgModule().Client {
    #unreplicated = false

    constructor (config?: string | pg.ClientConfig) {
      super(config)
      this.on('error', () => {})
      // With synchronous replication, a commit waits for a standby's confirmation. If the wait is
      // cut short (the statement time limit, the session ended), PostgreSQL commits on the primary
      // alone and says so only in a WARNING; the query itself succeeds. Such a commit is turned
      // into an error (503) here, so that no write is acknowledged that a failover could lose.
      // The server's messages must be in English (lc_messages C or en), as they are by default.
      this.on('notice', (notice: { message?: string }) => {
        if (notice.message?.includes('wait for synchronous replication') === true) this.#unreplicated = true
      })
    }

    override query (...args: unknown[]): any {
      const [text, values] = args
      if (args.length !== 2 || typeof text !== 'string' || !Array.isArray(values)) return (super.query as (...a: unknown[]) => unknown)(...args)
      return new Promise<pg.QueryResult>((resolve, reject) => {
        this.guardedQuery(text, values, (error, result) => { if (error === null) resolve(result); else reject(error) })
      })
    }

    /** Sends one query in pg's callback form, named when it is a hot query, within the time limit. */
    guardedQuery (text: string, values: unknown[], callback: QueryCallback): void {
      // A hot query's text (db/statement-names.ts) goes as a named prepared statement.
      const name = preparedStatements ? statementName(text) : undefined
      const timer = queryTimeoutMs === undefined ? undefined : this.#giveUpAfter(queryTimeoutMs)
      this.#unreplicated = false
      const done: QueryCallback = (error, result) => {
        clearTimeout(timer)
        if (error === null && this.#unreplicated) callback(new CommitNotReplicated(), result)
        else callback(error, result)
      }
      const query = super.query as (config: pg.QueryConfig | string, values: unknown[] | undefined, callback: QueryCallback) => void
      if (name === undefined) query.call(this, text, values, done)
      else query.call(this, { name, text, values }, undefined, done)
    }

    /** Destroys the connection after `ms`, failing its queries; the timer holds only the socket. */
    #giveUpAfter (ms: number): NodeJS.Timeout {
      const stream = (this as unknown as { connection: { stream: { destroy: (error: Error) => void } } }).connection.stream
      return setTimeout(() => { stream.destroy(new QueryReadTimeout()) }, ms)
    }
  }
}

function openPostgres (url: string, limits: boolean, preparedStatements: boolean): Kysely<Database> {
  const pg = pgModule()
  const pool = new pg.Pool({
    connectionString: url,
    Client: guardedClient(preparedStatements, limits ? QUERY_TIMEOUT_MS : undefined),
    max: 10,
    // A database that cannot be reached must give a quick 503, never a hanging request. This
    // also bounds the wait for a free client when every one is busy.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30000,
    // A database host that vanishes without a word (power, network) leaves its connections open
    // here: TCP keepalive probes an idle one after 10 s, so the kernel finds it dead instead of
    // a request finding it first (and waiting out the query limit). Behind HAProxy the balancer
    // also cuts the sessions of a node that stops being primary.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(limits ? { statement_timeout: STATEMENT_TIMEOUT_MS } : {}),
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
    }
  })
  // An idle client losing its connection also emits 'error' on the pool; without a listener
  // that would crash the process. The next query reports the outage instead.
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  postgresPools.set(db, pool)
  return db
}

const postgresPools = new WeakMap<Kysely<Database>, pg.Pool>()

/** The PostgreSQL pool under a database handle; undefined on SQLite. */
export function postgresPoolOf (db: Kysely<Database>): pg.Pool | undefined {
  return postgresPools.get(db)
}

type GuardedPoolClient = pg.PoolClient & { guardedQuery: (text: string, values: unknown[], callback: QueryCallback) => void }

/**
 * Runs a compiled query outside any transaction on a connection from the pool, as Kysely's
 * executor would (a pooled client, released after the query, the same result), but in pg's
 * callback form from end to end: Kysely's executor, its driver and pg-pool's promise form are
 * several awaits per query, about a twentieth of a read's time on PostgreSQL
 * (docs/decisions.md, Performance). Like Kysely, it releases the client without an error: one that failed
 * a statement is still usable, and one whose time limit passed was destroyed, which the pool
 * sees and replaces.
 */
export async function runOnPool<R> (pool: pg.Pool, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  return await new Promise((resolve, reject) => {
    pool.connect((error, client, release) => {
      if (client === undefined) { reject(error); return }
      (client as GuardedPoolClient).guardedQuery(query.sql, query.parameters as unknown[], (error, result) => {
        release()
        if (error !== null) { reject(error); return }
        const { command, rowCount, rows } = result
        const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
        resolve({ numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined, rows: rows as R[] })
      })
    })
  })
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
  /** SQLite: the file is replicated by Litestream (BACKUP_URL), which then makes the checkpoints. */
  replicated?: boolean
}

/** The database a DATABASE_URL names: `file:` is the embedded SQLite file, anything else PostgreSQL. */
export function dialectOf (databaseUrl: string): DialectName {
  return databaseUrl.startsWith('file:') ? 'sqlite' : 'postgres'
}

/** Opens the database named by DATABASE_URL. */
export function openDatabase (databaseUrl: string, { queryLimits = true, preparedStatements = true, replicated = false }: OpenOptions = {}): DatabaseHandle {
  if (dialectOf(databaseUrl) === 'sqlite') {
    return { db: openSqlite(sqliteFile(databaseUrl), replicated), dialect: 'sqlite' }
  }
  return { db: openPostgres(databaseUrl, queryLimits, preparedStatements), dialect: 'postgres' }
}
