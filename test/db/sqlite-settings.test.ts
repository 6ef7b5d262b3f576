import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { openDatabase, sqliteHandleOf } from '../../src/db/database.js'
import type { Database } from '../../src/db/schema.js'
import { scratchDatabase } from '../scratch-database.js'
import { dialect } from '../helper.js'

// The settings of the service's two SQLite connections (src/db/database.ts). The writer, which
// runs every write through the group commit: the durability of a write (write-ahead log, a full
// sync at each commit), foreign keys, how long it waits for the lock. The reader: it only reads
// (query_only). Both: how long they wait for a lock, the size of SQLite's own page cache, which
// counts against the process's memory, and how a statement passes its values: each parameter
// as `+?`, which SQLite does not plan by, so a statement is not planned again every time it
// runs (src/db/sqlite-connection.ts).

describe('the SQLite connections', { skip: dialect !== 'sqlite' && 'SQLite only' }, async () => {
  const { url, drop } = await scratchDatabase('sqlite-settings')
  const { db } = openDatabase(url)
  const { writerDb } = sqliteHandleOf(db)!
  after(async () => { await db.destroy(); await drop() })

  async function pragma (on: Kysely<Database>, name: string): Promise<unknown> {
    const { rows } = await sql<Record<string, unknown>>`${sql.raw(`pragma ${name}`)}`.execute(on)
    // The one column's name is not always the pragma's (busy_timeout answers `timeout`).
    return Object.values(rows[0] ?? {})[0]
  }

  test('the writer: a write-ahead log, synced in full at every commit, foreign keys enforced', async () => {
    assert.equal(await pragma(writerDb, 'journal_mode'), 'wal')
    assert.equal(await pragma(writerDb, 'synchronous'), 2n) // FULL
    assert.equal(await pragma(writerDb, 'foreign_keys'), 1n)
    assert.equal(await pragma(writerDb, 'query_only'), 0n)
  })

  test('the reader only reads, on the same write-ahead log', async () => {
    assert.equal(await pragma(db, 'journal_mode'), 'wal')
    assert.equal(await pragma(db, 'query_only'), 1n)
  })

  test('both wait up to 5 s for a lock and keep a page cache of 4 MiB, not the 16 MiB better-sqlite3 would give them', async () => {
    for (const on of [db, writerDb]) {
      assert.equal(await pragma(on, 'busy_timeout'), 5000n)
      // Negative: a size in KiB rather than in pages.
      assert.equal(await pragma(on, 'cache_size'), -4096n)
    }
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
