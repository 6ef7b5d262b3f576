import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Transaction } from 'kysely'
import { execute, precompiled } from '../../src/db/compiled.js'
import type { Database, Executor } from '../../src/db/schema.js'
import { write } from '../../src/db/write.js'
import { buildTestApp, dialect, gate } from '../helper.js'

// A precompiled query runs through execute. On SQLite that runs it on a connection at once
// (without Kysely's promise chain): the writer inside a unit of work, the reader otherwise. On
// PostgreSQL, outside a transaction, it runs on a pooled connection without Kysely (runOnPool).
// Either way it must answer as Kysely does, and a read must never see a unit's uncommitted work.

const NOW = '2026-01-01T00:00:00.000Z'
const userName = precompiled((db: Executor, id: bigint) => db.selectFrom('users').select(['id', 'name']).where('id', '=', id))
const rename = precompiled((db: Executor, id: bigint, name: string) => db.updateTable('users').set({ name }).where('id', '=', id))
const addUser = precompiled((db: Executor, email: string) =>
  db.insertInto('users').values({ email, name: 'Added', password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW }))

async function insertUser (db: Executor, email: string, name: string): Promise<bigint> {
  const row = await write(db, async (trx) => await trx.insertInto('users').values({ email, name, password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW }).returning('id').executeTakeFirstOrThrow())
  return row.id
}

describe('running a precompiled query', () => {
  test('answers exactly as Kysely does: rows, affected rows, the inserted id', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Ann')
      // The same reads on the handle and in a unit; the same writes in a unit.
      const reads = async (db: Executor): Promise<void> => {
        assert.deepEqual(await execute(db, userName(db, id)), await db.executeQuery(userName(db, id)))
        const none = await execute(db, userName(db, id + 100n))
        assert.deepEqual(none.rows, [])
        assert.deepEqual(none, await db.executeQuery(userName(db, id + 100n)))
      }
      await reads(app.db)
      await write(app.db, reads)
      await write(app.db, async (trx) => {
        assert.deepEqual(await execute(trx, rename(trx, id, 'Anne')), await trx.executeQuery(rename(trx, id, 'Anne')))
        assert.deepEqual(await execute(trx, rename(trx, id + 100n, 'Nobody')), await trx.executeQuery(rename(trx, id + 100n, 'Nobody')))
        const viaExecute = await execute(trx, addUser(trx, 'b@example.com'))
        const viaKysely = await trx.executeQuery(addUser(trx, 'c@example.com'))
        assert.deepEqual(Object.keys(viaExecute).sort(), Object.keys(viaKysely).sort())
        assert.equal(viaExecute.numAffectedRows, 1n)
        assert.equal(viaKysely.numAffectedRows, 1n)
        assert.deepEqual(viaExecute.rows, [])
        if (dialect === 'sqlite') assert.equal(viaKysely.insertId, viaExecute.insertId! + 1n)
      })
    } finally {
      await close()
    }
  })

  test('a read while a unit of work is open is answered at once, from what has committed', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Before')
      const during = gate()
      const written = gate()
      const unit = write(app.db, async (trx) => {
        await execute(trx, rename(trx, id, 'During'))
        written.open()
        await during.opened
        throw new Error('undo')
      })
      await written.opened
      // The unit holds its uncommitted rename (on SQLite its batch holds the writer): the read
      // runs on another connection and is not kept waiting.
      assert.deepEqual((await execute(app.db, userName(app.db, id))).rows, [{ id, name: 'Before' }])
      during.open()
      await assert.rejects(unit, /undo/)
      assert.deepEqual((await execute(app.db, userName(app.db, id))).rows, [{ id, name: 'Before' }])
    } finally {
      await close()
    }
  })

  test('SQLite: a write outside a unit of work is refused (the reader is query_only), never run around the group commit', { skip: dialect !== 'sqlite' && 'SQLite has a reader connection' }, async () => {
    const { app, close } = await buildTestApp()
    try {
      await assert.rejects(execute(app.db, addUser(app.db, 'outside@example.com')), /readonly database/)
      await assert.rejects(app.db.insertInto('users').values({ email: 'k@example.com', name: 'K', password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW }).execute(), /readonly database/)
      assert.deepEqual(await app.db.selectFrom('users').select('email').execute(), [])
    } finally {
      await close()
    }
  })

  test('a transaction kept past its end runs nothing', async () => {
    const { app, close } = await buildTestApp()
    try {
      const id = await insertUser(app.db, 'a@example.com', 'Before')
      let kept: Transaction<Database> | undefined
      await write(app.db, async (trx) => { kept = trx })
      await assert.rejects(execute(kept!, rename(kept!, id, 'After')), /Transaction is already committed/)
      await assert.rejects(kept!.updateTable('users').set({ name: 'After' }).execute(), /Transaction is already committed/)
      assert.deepEqual((await execute(app.db, userName(app.db, id))).rows, [{ id, name: 'Before' }])
    } finally {
      await close()
    }
  })
})
