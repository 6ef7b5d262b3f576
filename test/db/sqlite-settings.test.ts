import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/database.js'
import { scratchDatabase } from '../scratch-database.js'
import { dialect } from '../helper.js'

// The settings every SQLite connection of the service opens with: the durability of a write
// (write-ahead log, a full sync at each commit), foreign keys, how long a writer waits for the
// lock, and the size of SQLite's own page cache, which counts against the process's memory.

describe('a SQLite connection', { skip: dialect !== 'sqlite' && 'SQLite only' }, async () => {
  const { url, drop } = await scratchDatabase('sqlite-settings')
  const { db } = openDatabase(url)
  after(async () => { await db.destroy(); await drop() })

  async function pragma (name: string): Promise<unknown> {
    const { rows } = await sql<Record<string, unknown>>`${sql.raw(`pragma ${name}`)}`.execute(db)
    // The one column's name is not always the pragma's (busy_timeout answers `timeout`).
    return Object.values(rows[0] ?? {})[0]
  }

  test('writes through a write-ahead log, synced in full at every commit', async () => {
    assert.equal(await pragma('journal_mode'), 'wal')
    assert.equal(await pragma('synchronous'), 2n) // FULL
  })

  test('enforces foreign keys and waits up to 5 s for the write lock', async () => {
    assert.equal(await pragma('foreign_keys'), 1n)
    assert.equal(await pragma('busy_timeout'), 5000n)
  })

  test('keeps a page cache of 4 MiB, not the 16 MiB better-sqlite3 would give it', async () => {
    // Negative: a size in KiB rather than in pages.
    assert.equal(await pragma('cache_size'), -4096n)
  })
})
