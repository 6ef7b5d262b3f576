import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { precompiled } from '../../src/db/compiled.js'
import { sqliteHandleOf } from '../../src/db/database.js'
import { precompiledLock } from '../../src/db/lock.js'
import type { Executor } from '../../src/db/schema.js'
import { write } from '../../src/db/write.js'
import { buildTestApp, dialect } from '../helper.js'

// A hot query is built and compiled once per database handle; a unit of work (write) uses its
// handle's compiled form, so a write path builds nothing per request.

describe('precompiled queries', () => {
  test('built once per handle: by the handle and by every unit of work on it', async () => {
    const { app, close } = await buildTestApp()
    try {
      let builds = 0
      const userName = precompiled((db: Executor, id: bigint) => {
        builds += 1
        return db.selectFrom('users').select('name').where('id', '=', id)
      })
      const first = userName(app.db, 1n)
      const second = userName(app.db, 2n)
      assert.equal(builds, 1)
      assert.equal(second.sql, first.sql)
      assert.deepEqual(second.parameters, [2n])
      const inside = await write(app.db, async (trx) => [userName(trx, 3n), userName(trx, 4n)])
      await write(app.db, async (trx) => { userName(trx, 5n) })
      assert.equal(builds, 1)
      assert.deepEqual(inside.map((q) => [q.sql, q.parameters]), [[first.sql, [3n]], [first.sql, [4n]]])
      // A transaction opened some other way cannot be traced to its handle: built as usual, same
      // SQL. (On SQLite the handle's own connection only reads: the writer's Kysely opens it.)
      const direct = await (sqliteHandleOf(app.db)?.writerDb ?? app.db).transaction().execute(async (trx) => userName(trx, 6n))
      assert.equal(builds, 2)
      assert.equal(direct.sql, first.sql)
      assert.deepEqual(direct.parameters, [6n])
    } finally {
      await close()
    }
  })

  test('values put where the markers were: arguments out of order, around a constant of the builder', async () => {
    const { app, close } = await buildTestApp()
    try {
      const named = precompiled((db: Executor, limit: number, name: string) =>
        db.selectFrom('users').select('id').where('name', '=', name).where('id', '>', 0n).limit(limit))
      const first = named(app.db, 5, 'Ada')
      const second = named(app.db, 7, 'Bob')
      assert.deepEqual(first.parameters, ['Ada', 0n, 5])
      assert.deepEqual(second.parameters, ['Bob', 0n, 7])
      // In order, the call's arguments are its parameters: each call has its own list.
      const byId = precompiled((db: Executor, id: bigint, name: string) => db.selectFrom('users').select('id').where('id', '=', id).where('name', '=', name))
      const [a, b] = [byId(app.db, 1n, 'Ada'), byId(app.db, 2n, 'Bob')]
      assert.deepEqual([a.parameters, b.parameters], [[1n, 'Ada'], [2n, 'Bob']])
      assert.notEqual(a.parameters, b.parameters)
      assert.equal(a.query, b.query)
    } finally {
      await close()
    }
  })

  test('a query inside a transaction runs on the transaction: rolled back with it', async () => {
    const { app, close } = await buildTestApp()
    try {
      const rename = precompiled((db: Executor, name: string) => db.updateTable('users').set({ name }).where('id', '>', 0n))
      await write(app.db, async (trx) => await trx.insertInto('users').values({ email: 'p@example.com', name: 'Before', password_hash: 'x', role: 'USER', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' }).execute())
      await assert.rejects(write(app.db, async (trx) => {
        await trx.executeQuery(rename(trx, 'During'))
        throw new Error('undo')
      }), /undo/)
      assert.deepEqual(await app.db.selectFrom('users').select('name').execute(), [{ name: 'Before' }])
    } finally {
      await close()
    }
  })

  test('a row lock is FOR UPDATE on PostgreSQL only', async () => {
    const { app, close } = await buildTestApp()
    try {
      const lock = precompiledLock((db: Executor, id: bigint) => db.selectFrom('users').select(['id', 'name']).where('id', '=', id))
      const sqls = await write(app.db, async (trx) => [lock(trx, 'postgres', 1n).sql, lock(trx, 'sqlite', 1n).sql])
      assert.match(sqls[0]!, / for update$/)
      assert.doesNotMatch(sqls[1]!, /for update/)
      const row = await write(app.db, async (trx) => (await trx.executeQuery(lock(trx, dialect, 1n))).rows)
      assert.deepEqual(row, [])
    } finally {
      await close()
    }
  })
})
