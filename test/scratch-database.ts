import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

export interface ScratchDatabase {
  /** A DATABASE_URL for the new, empty database. */
  url: string
  /** Removes the database (and, for SQLite, its folder). */
  drop: () => Promise<void>
}

/**
 * A new, empty database for one test file or benchmark: a SQLite file in a new temporary
 * folder, or, given a PostgreSQL URL with the right to create databases, a new database there.
 */
export async function scratchDatabase (prefix: string, postgresAdminUrl?: string): Promise<ScratchDatabase> {
  if (postgresAdminUrl === undefined) {
    const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
    return { url: `file:${join(dir, 'app.db')}`, drop: async () => { rmSync(dir, { recursive: true, force: true }) } }
  }
  const name = `${prefix.replace(/\W/g, '_')}_${randomBytes(6).toString('hex')}`
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: postgresAdminUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await run(`CREATE DATABASE ${name}`)
  const url = new URL(postgresAdminUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: async () => { await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) } }
}
