import { createHash, randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Sqlite from 'better-sqlite3'
import pg from 'pg'
import { openDatabase } from '../src/db/database.js'
import { migrateToLatest, migrationNames } from '../src/db/migrate.js'
import type { ScratchDatabase } from './scratch-database.js'

// A new database with every migration already applied, for a test file's app: a copy of a
// template migrated once, rather than the 20 migrations run again for each of the suite's
// ~300 apps (about 70 ms of CPU each on SQLite, 120–250 ms on PostgreSQL, most of it the
// server's). The template is named by a hash of the migrations' source, so a changed migration
// makes a new one; the app's own migrateToLatest still runs on the copy (and finds nothing to do).
// Tests of migrating itself start from scratchDatabase's empty one.

const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'db')

let migrationsHash: string | undefined
/** A hash of everything that decides the migrated schema: migrate.ts and the migrations folder (read once a process). */
function migrationsKey (): string {
  migrationsHash ??= hashOfMigrations()
  return migrationsHash
}

function hashOfMigrations (): string {
  const hash = createHash('sha256')
  const files = [join(migrationsDir, 'migrate.ts'), ...readdirSync(join(migrationsDir, 'migrations')).sort().map((name) => join(migrationsDir, 'migrations', name))]
  for (const file of files) hash.update(file.slice(migrationsDir.length)).update(readFileSync(file))
  return hash.digest('hex').slice(0, 16)
}

async function migrate (url: string): Promise<void> {
  const database = openDatabase(url, {})
  try {
    await migrateToLatest(database.db, database.dialect)
  } finally {
    await database.db.destroy()
  }
}

async function sqliteTemplate (key: string): Promise<string> {
  const folder = join(tmpdir(), 'resource-api-test-templates')
  const template = join(folder, `sqlite-${key}.db`)
  if (existsSync(template)) return template
  mkdirSync(folder, { recursive: true })
  // Built aside and renamed into place: a file that exists under the name is complete, whichever
  // of several test processes starting at once gets there first.
  const dir = mkdtempSync(join(folder, 'building-'))
  try {
    await migrate(`file:${join(dir, 'app.db')}`)
    // Whatever the handle's connections left in the write-ahead log is folded into the file, so
    // the file alone is the database; what is left of the log is empty.
    const sqlite = new Sqlite(join(dir, 'app.db'))
    sqlite.pragma('wal_checkpoint(TRUNCATE)')
    const applied = sqlite.prepare('SELECT count(*) AS n FROM kysely_migration').get() as { n: number }
    sqlite.close()
    if (applied.n !== migrationNames().length) throw new Error(`the template database has ${applied.n} migrations of ${migrationNames().length}`)
    if (existsSync(join(dir, 'app.db-wal')) && statSync(join(dir, 'app.db-wal')).size > 0) throw new Error('the template database kept a write-ahead log after closing')
    renameSync(join(dir, 'app.db'), template)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return template
}

async function withClient<T> (url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function postgresTemplate (key: string, adminUrl: string): Promise<string> {
  const name = `test_template_${key}`
  const exists = async (client: pg.Client): Promise<boolean> => (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
  await withClient(adminUrl, async (client) => {
    if (await exists(client)) return
    // One process builds it; the others wait on the lock and then find it.
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [name])
    try {
      if (await exists(client)) return
      const building = `${name}_building_${randomBytes(4).toString('hex')}`
      await client.query(`CREATE DATABASE ${building}`)
      const url = new URL(adminUrl)
      url.pathname = `/${building}`
      await migrate(url.toString())
      await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`)
      // Templates of older migrations are of no more use (one in use by another checkout's run
      // is left: dropping it fails, harmlessly).
      const stale = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'test\\_template\\_%' AND datname <> $1", [name])
      for (const row of stale.rows) await client.query(`DROP DATABASE IF EXISTS ${row.datname}`).catch(() => {})
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name])
    }
  })
  return name
}

/** A new database, migrated to the latest version: SQLite when no PostgreSQL URL is given. */
export async function migratedDatabase (prefix: string, postgresAdminUrl?: string): Promise<ScratchDatabase> {
  const key = migrationsKey()
  if (postgresAdminUrl === undefined) {
    const template = await sqliteTemplate(key)
    const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
    copyFileSync(template, join(dir, 'app.db'))
    return { url: `file:${join(dir, 'app.db')}`, drop: async () => { rmSync(dir, { recursive: true, force: true }) } }
  }
  const template = await postgresTemplate(key, postgresAdminUrl)
  const name = `${prefix.replace(/\W/g, '_')}_${randomBytes(6).toString('hex')}`
  await withClient(postgresAdminUrl, async (client) => { await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`) })
  const url = new URL(postgresAdminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => { await withClient(postgresAdminUrl, async (client) => { await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }) }
  }
}
