import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Transaction } from 'kysely'
import { execute, precompiled } from '../../src/db/compiled.js'
import type { Database, Executor } from '../../src/db/schema.js'
import { inTransaction } from '../../src/db/transaction.js'
import { buildTestApp, dialect, gate } from '../helper.js'

// A precompiled query runs through execute. On SQLite that runs it on the connection at once
// (without Kysely's promise chain) inside a transaction opened by inTransaction, and outside any
// transaction while no one holds the connection. On PostgreSQL, outside a transaction, it runs on
// a pooled connection without Kysely (runOnPool). Either way it must never run inside another
// caller's transaction, nor answer differently from Kysely.

const NOW = '2026-01-01T00:00:00.000Z'
const userName = precompiled((db: Executor, id: bigint) => db.selectFrom('users').select(['id', 'name']).where('id', '=', id))
const rename = precompiled((db: Executor, id: bigint, name: string) => db.updateTable('users').set({ name }).where('id', '=', id))
const addUser = precompiled((db: Executor, email: string) =>
  db.insertInto('users').values({ email, name: 'Added', password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW }))

async function insertUser (db: Executor, email: string, name: string): Promise<bigint> {
  const row = await db.insertInto('users').values({ email, name, password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW }).returning('id').executeTakeFirstOrThrow()
  return row.id
}

describe('running a precompiled query', () => {
  test('answers exactly as Kysely does: rows, affected rows, the inserted id', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Ann')
      // The same query, run both ways, on the handle and in a transaction.
      const both = async (db: Executor): Promise<void> => {
        assert.deepEqual(await execute(db, userName(db, id)), await db.executeQuery(userName(db, id)))
        const none = await execute(db, userName(db, id + 100n))
        assert.deepEqual(none.rows, [])
        assert.deepEqual(none, await db.executeQuery(userName(db, id + 100n)))
        assert.deepEqual(await execute(db, rename(db, id, 'Anne')), await db.executeQuery(rename(db, id, 'Anne')))
        assert.deepEqual(await execute(db, rename(db, id + 100n, 'Nobody')), await db.executeQuery(rename(db, id + 100n, 'Nobody')))
      }
      await both(app.db)
      await inTransaction(app.db, both)
      const viaExecute = await execute(app.db, addUser(app.db, 'b@example.com'))
      const viaKysely = await app.db.executeQuery(addUser(app.db, 'c@example.com'))
      assert.deepEqual(Object.keys(viaExecute).sort(), Object.keys(viaKysely).sort())
      assert.equal(viaExecute.numAffectedRows, 1n)
      assert.equal(viaKysely.numAffectedRows, 1n)
      assert.deepEqual(viaExecute.rows, [])
      if (dialect === 'sqlite') assert.equal(viaKysely.insertId, viaExecute.insertId! + 1n)
    } finally {
      await close()
    }
  })

  test('outside a transaction, neither reads its uncommitted writes nor joins it', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Before')
      const during = gate()
      const written = gate()
      const events: string[] = []
      const transaction = inTransaction(app.db, async (trx) => {
        await execute(trx, rename(trx, id, 'During'))
        written.open()
        await during.opened
        events.push('rolled back')
        throw new Error('undo')
      })
      await written.opened
      // Both are sent while the transaction holds its uncommitted rename.
      const read = execute(app.db, userName(app.db, id)).then((result) => { events.push('read'); return result })
      const insert = execute(app.db, addUser(app.db, 'outside@example.com'))
      // Let them run as far as they can before the transaction ends: on PostgreSQL the read is
      // answered from another connection while the transaction is still open (were it to wait
      // for the transaction, this would hang and the test fail); SQLite's one connection makes it
      // wait, so there it gets a moment, then the transaction ends.
      if (dialect === 'postgres') await read
      else await new Promise((resolve) => setTimeout(resolve, 50))
      during.open()
      await assert.rejects(transaction, /undo/)
      assert.deepEqual((await read).rows, [{ id, name: 'Before' }])
      await insert
      // The insert was not undone with the transaction.
      assert.deepEqual(await app.db.selectFrom('users').select('email').where('email', '=', 'outside@example.com').execute(), [{ email: 'outside@example.com' }])
      // SQLite has one connection: the read waited for the transaction. PostgreSQL read the last
      // committed row on another connection at once.
      assert.deepEqual(events, dialect === 'sqlite' ? ['rolled back', 'read'] : ['read', 'rolled back'])
    } finally {
      await close()
    }
  })

  test('a transaction kept past its end runs nothing', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Before')
      let kept: Transaction<Database> | undefined
      await inTransaction(app.db, async (trx) => { kept = trx })
      await assert.rejects(execute(kept!, rename(kept!, id, 'After')), /Transaction is already committed/)
      assert.deepEqual((await execute(app.db, userName(app.db, id))).rows, [{ id, name: 'Before' }])
    } finally {
      await close()
    }
  })
})
