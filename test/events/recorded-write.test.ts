import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { execute, precompiled } from '../../src/db/compiled.js'
import { groupCommitOf } from '../../src/db/database.js'
import type { Db, Executor } from '../../src/db/schema.js'
import { write } from '../../src/db/write.js'
import { writeWithEvents } from '../../src/events/recorded-write.js'
import { insertPost } from '../../src/posts/post.repository.js'
import { buildTestApp, gate } from '../helper.js'

// A write and its events commit together or not at all, however writeWithEvents runs them: as a
// unit of its own or inside the caller's (on SQLite through the group commit; on PostgreSQL as
// one statement, or in the caller's transaction). Each way, a write whose event cannot be made
// leaves nothing, and a write made while another caller's unit is open neither joins its
// changes nor is undone with it.

const NOW = '2026-01-01T00:00:00.000Z'
const rename = precompiled((db: Executor, id: bigint, name: string) => db.updateTable('users').set({ name }).where('id', '=', id))

async function author (db: Db): Promise<bigint> {
  const row = await write(db, async (trx) => await trx.insertInto('users').values({ email: 'author@example.com', name: 'Author', password_hash: 'x', role: 'USER', created_at: NOW, updated_at: NOW })
    .returning('id').executeTakeFirstOrThrow())
  return row.id
}

/** A post by `authorId`, with its post.created event (or an event whose data cannot be made). */
async function writePost (db: Executor, authorId: bigint, title: string, failing = false): Promise<bigint> {
  const row = await writeWithEvents(db, insertPost(db, { authorId, title, content: 'Body', now: NOW }), {
    type: 'post.created',
    data: (id) => {
      if (failing) throw new Error('no representation')
      return { id, title }
    },
    actor: { userId: authorId, apiKeyId: 7n }
  }, [{ type: 'user.updated', resourceId: authorId, audience: authorId, data: { id: authorId }, actor: { userId: null, apiKeyId: null } }], NOW)
  return row.id
}

/** Resolves once `promise` has settled, or fails naming `what` after `ms`. */
async function settlesWithin (promise: Promise<unknown>, ms: number, what: string): Promise<void> {
  const bound = new AbortController()
  try {
    await Promise.race([
      promise.then(() => {}, () => {}),
      delay(ms, undefined, { signal: bound.signal }).then(() => { throw new Error(`${what}: not settled after ${ms} ms`) })
    ])
  } finally {
    bound.abort()
  }
}

/** The events are exactly those of the one post kept: its post.created, then the author's user.updated, each with its actor. */
async function assertEventsOf (db: Db, postId: bigint, authorId: bigint): Promise<void> {
  const events = await db.selectFrom('events').select(['type', 'resource_id', 'actor_user_id', 'actor_api_key_id']).orderBy('id').execute()
  const idOrNull = (id: bigint | number | string | null) => id === null ? null : BigInt(id)
  assert.deepEqual(events.map((e) => [e.type, BigInt(e.resource_id), idOrNull(e.actor_user_id), idOrNull(e.actor_api_key_id)]), [['post.created', postId, authorId, 7n], ['user.updated', authorId, null, null]])
}

describe('a write with its events', () => {
  test('outside a transaction: the row and every event, or, when an event cannot be made, nothing', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const authorId = await author(app.db)
    const id = await writePost(app.db, authorId, 'Kept')
    await assert.rejects(writePost(app.db, authorId, 'Never', true), /no representation/)
    assert.deepEqual((await app.db.selectFrom('posts').select('title').execute()).map((p) => p.title), ['Kept'])
    await assertEventsOf(app.db, id, authorId)
  })

  test('inside a unit of work: undone with it, events and all', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const authorId = await author(app.db)
    await assert.rejects(write(app.db, async (trx) => {
      await writePost(trx, authorId, 'Undone')
      throw new Error('undo')
    }), /undo/)
    await assert.rejects(write(app.db, async (trx) => await writePost(trx, authorId, 'Never', true)), /no representation/)
    const id = await write(app.db, async (trx) => await writePost(trx, authorId, 'Kept'))
    assert.deepEqual((await app.db.selectFrom('posts').select('title').execute()).map((p) => p.title), ['Kept'])
    await assertEventsOf(app.db, id, authorId)
  })

  test('while another unit is open: neither joins it nor is undone with it', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const authorId = await author(app.db)
    // SQLite: the batch takes units for as long as this test holds the first one (its 10 ms
    // bound would otherwise close it first), so that the write outside joins that batch.
    const group = groupCommitOf(app.db)
    if (group !== undefined) group.limits.ms = 60_000
    const during = gate()
    const written = gate()
    const transaction = write(app.db, async (trx) => {
      await execute(trx, rename(trx, authorId, 'Renamed, then undone'))
      written.open()
      await during.opened
      throw new Error('undo')
    })
    await written.opened
    // Sent while the unit holds its uncommitted rename: on SQLite it queues behind it, and runs
    // after it in the same batch, in a savepoint of its own; on PostgreSQL it runs on another
    // connection, and commits while the unit is still open.
    const outside = writePost(app.db, authorId, 'Outside')
    try {
      if (group !== undefined) assert.equal(group.queued, 1, 'the write outside waits behind the open unit')
      else await settlesWithin(outside, 10_000, 'the write outside, while the unit is open')
    } finally {
      during.open()
    }
    await assert.rejects(transaction, /undo/)
    const id = await outside
    assert.deepEqual((await app.db.selectFrom('posts').select('title').execute()).map((p) => p.title), ['Outside'])
    assert.equal((await app.db.selectFrom('users').select('name').where('id', '=', authorId).executeTakeFirstOrThrow()).name, 'Author')
    await assertEventsOf(app.db, id, authorId)
  })
})
