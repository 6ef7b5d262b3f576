import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, type DatabaseConnection, type Driver } from 'kysely'
import pg from 'pg'
import type { Database } from './schema.js'

export type DialectName = 'sqlite' | 'postgres'

export interface DatabaseHandle {
  db: Kysely<Database>
  dialect: DialectName
}

// Kysely's SQLite driver opens transactions with a plain (deferred) BEGIN. A deferred
// transaction that reads and then writes can fail with SQLITE_BUSY when another process holds
// the write lock, and busy_timeout cannot help it; BEGIN IMMEDIATE takes the write lock up
// front, so the busy timeout applies and writers queue instead of failing.
class ImmediateSqliteDialect extends SqliteDialect {
  override createDriver (): Driver {
    const driver = super.createDriver()
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'))
    }
    return driver
  }
}

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
  return new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: sqlite }) })
}

const INT8_OID = 20

function openPostgres (url: string): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // A database that cannot be reached must give a quick 503, never a hanging request.
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    statement_timeout: 30000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
    }
  })
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process. The next query reports the outage instead.
  pool.on('error', () => {})
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
}

export function openDatabase (databaseUrl: string): DatabaseHandle {
  if (databaseUrl.startsWith('file:')) {
    return { db: openSqlite(databaseUrl.slice('file:'.length)), dialect: 'sqlite' }
  }
  return { db: openPostgres(databaseUrl), dialect: 'postgres' }
}
