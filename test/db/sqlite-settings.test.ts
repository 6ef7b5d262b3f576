import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/database.js'
import { scratchDatabase } from '../scratch-database.js'
import { dialect } from '../helper.js'

// The settings every SQLite connection of the service opens with: the durability of a write
// (write-ahead log, a full sync at each commit), foreign keys, how long a writer waits for the
// lock, and the size of SQLite's own page cache, which counts against the process's memory.
// And how a statement passes its values: each parameter as `+?`, which SQLite does not plan by,
// so a statement is not planned again every time it runs (src/db/sqlite-connection.ts).

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

  test('writes every parameter as +?, and a value passes through it unchanged', async () => {
    const query = db.selectFrom('users').select('id').where('email', '=', 'a@example.com').where('id', '<', 10n).limit(5).compile()
    assert.equal(query.sql, 'select "id" from "users" where "email" = +? and "id" < +? limit +?')
    assert.deepEqual(query.parameters, ['a@example.com', 10n, 5])
    // Unary plus is the identity in SQLite: text, integers, blobs and null keep value and type.
    const { rows } = await sql<Record<string, unknown>>`select ${'007'} as t, typeof(${'007'}) as tt, ${7n} as i, ${Buffer.from([1, 2])} as b, ${null} as n`.execute(db)
    assert.deepEqual(rows[0], { t: '007', tt: 'text', i: 7n, b: Buffer.from([1, 2]), n: null })
  })
})
