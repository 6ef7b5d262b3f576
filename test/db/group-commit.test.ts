import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import fc from 'fast-check'
import { sql } from 'kysely'
import { groupCommitOf } from '../../src/db/database.js'
import { CommitFailed } from '../../src/db/errors.js'
import type { Db, Executor } from '../../src/db/schema.js'
import { write } from '../../src/db/write.js'
import { ApiError } from '../../src/http/errors.js'
import { assertError, buildTestApp, createUser, dialect, gate } from '../helper.js'

// Group commit (src/db/group-commit.ts): on SQLite the units of work that arrive together share
// one transaction, each in its own savepoint, and one COMMIT; none is answered before it. These
// tests submit units the way requests do and look at what was committed, what each unit was
// answered and what a reader saw meanwhile.

const skip = dialect !== 'sqlite' && 'the group commit is SQLite\'s'
const NOW = '2026-01-01T00:00:00.000Z'

async function product (db: Db, stock: number): Promise<bigint> {
  const row = await write(db, async (trx) => await trx.insertInto('products')
    .values({ name: 'P', price: 100, category: 'BOOK', stock, on_sale: 1, created_at: NOW, updated_at: NOW }).returning('id').executeTakeFirstOrThrow())
  return row.id
}

async function stockOf (db: Executor, id: bigint): Promise<number> {
  return Number((await db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock)
}

/** Takes `units` from stock, or refuses (409) when there are not that many: a read, a check, a write. */
async function take (trx: Executor, id: bigint, units: number): Promise<number> {
  const stock = await stockOf(trx, id)
  if (stock < units) throw new ApiError('NOT_ENOUGH_STOCK')
  await trx.updateTable('products').set({ stock: stock - units }).where('id', '=', id).execute()
  return stock - units
}

describe('group commit', { skip }, () => {
  test('units that arrive together share one commit; one failing in the middle leaves nothing, the others commit', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const id = await product(app.db, 100)
    const group = groupCommitOf(app.db)!
    // One batch for the nine submitted together, however slow a loaded machine runs them (the
    // 10 ms bound on a batch's work can split them in two, as the other tests here allow for).
    group.limits.ms = 60_000
    // Each unit notes how many batches had committed when it ran: one value for all nine is one
    // batch (the dispatcher's own writes may share it or take others: they are not counted here).
    const committedBefore: number[] = []
    const outcomes = await Promise.allSettled(Array.from({ length: 9 }, async (_, i) => await write(app.db, async (trx) => {
      committedBefore[i] = group.stats.batches
      await take(trx, id, 1)
      // The fifth takes its unit, then fails: its savepoint is rolled back, the others stand.
      if (i === 4) throw new Error('the fifth fails')
      return i
    })))
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'])
    assert.match(String((outcomes[4] as PromiseRejectedResult).reason), /the fifth fails/)
    assert.equal(await stockOf(app.db, id), 92)
    assert.equal(committedBefore.length, 9)
    assert.equal(new Set(committedBefore).size, 1, `one commit for the nine: ${committedBefore.join(' ')}`)
    // And that batch committed.
    assert.ok(group.stats.batches > committedBefore[0]!)
  })

  test('a reader never sees a batch in progress, through Kysely or a route', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const id = await product(app.db, 10)
    const held = gate()
    const taken = gate()
    const first = write(app.db, async (trx) => {
      const left = await take(trx, id, 3)
      taken.open()
      await held.opened
      return left
    })
    await taken.opened
    // The batch is open with the unit's change: a read outside it sees the committed stock,
    // through Kysely and through a route's precompiled query alike.
    try {
      assert.equal(await stockOf(app.db, id), 10)
      assert.equal((await app.inject({ method: 'GET', url: `/v1/products/${id}` })).json().stock, 10)
    } finally {
      held.open()
    }
    assert.equal(await first, 7)
    assert.equal(await stockOf(app.db, id), 7)
    assert.equal((await app.inject({ method: 'GET', url: `/v1/products/${id}` })).json().stock, 7)
  })

  test('a unit sees the units before it in its batch, and none is answered before the batch commits', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const id = await product(app.db, 10)
    let firstAnswered = false
    let firstAnsweredWhenSecondRan: boolean | undefined
    // Submitted together, so they share a batch.
    const first = write(app.db, async (trx) => await take(trx, id, 3)).then((left) => { firstAnswered = true; return left })
    const second = write(app.db, async (trx) => {
      const left = await take(trx, id, 5)
      // Past its own awaits: an answer given to the first unit would have been seen by now.
      firstAnsweredWhenSecondRan = firstAnswered
      return left
    })
    assert.equal(await second, 2, 'the second unit saw the first one\'s change')
    assert.equal(await first, 7)
    assert.equal(firstAnsweredWhenSecondRan, false)
  })

  test('a refusal is answered only once its batch commits, and never rests on a change that was rolled back', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const id = await product(app.db, 5)
    const group = groupCommitOf(app.db)!
    // One batch for both, however long the first is held (the 10 ms bound would close it first).
    group.limits.ms = 60_000
    const held = gate()
    const taken = gate()
    // What happened, in order: a unit running, a unit answered (with how many batches had
    // committed by then since the first unit began: its own batch is the first to).
    const happened: string[] = []
    let batches = Number.NaN
    const committed = (): string => `${group.stats.batches - batches} committed`
    // The first takes 4, then fails after the second has queued: the second must not have been
    // refused for the 4 that never left the stock.
    const first = write(app.db, async (trx) => {
      batches = group.stats.batches
      await take(trx, id, 4)
      taken.open()
      await held.opened
      throw new Error('undone')
    }).catch((error: unknown) => { happened.push(`first answered, ${committed()}`); throw error })
    await taken.opened
    const second = write(app.db, async (trx) => {
      const left = await take(trx, id, 3)
      happened.push('second ran')
      return left
    }).finally(() => { happened.push(`second answered, ${committed()}`) })
    held.open()
    await assert.rejects(first, /undone/)
    assert.equal(await second, 2)
    // The first's refusal waited for the second to run and for their batch to commit; then each
    // was answered, in the order they came.
    assert.deepEqual(happened, ['second ran', 'first answered, 1 committed', 'second answered, 1 committed'])
  })

  test('a failed COMMIT fails every unit of its batch with 503 and keeps none of them, an HTTP request among them', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const user = await createUser(app)
    const id = await product(app.db, 10)
    // The sign-up's mail is sent (and its sending recorded) first: the sender's units must not
    // join the batch held below in place of the request's.
    for (const started = Date.now(); (await app.db.selectFrom('mail_outbox').select('id').where('status', '=', 'PENDING').execute()).length > 0; await delay(10)) {
      assert.ok(Date.now() - started < 10_000, 'the sign-up mail was not sent within 10 s')
    }
    // The batch waits for this test's gate: no time limit ends it before the others join.
    groupCommitOf(app.db)!.limits.ms = 60_000
    const held = gate()
    const written = gate()
    // Deferred foreign keys are checked at COMMIT: a unit that breaks one makes the COMMIT fail.
    const breaking = write(app.db, async (trx) => {
      await sql`pragma defer_foreign_keys = on`.execute(trx)
      await trx.insertInto('posts').values({ author_id: 999_999n, title: 'T', content: 'C', created_at: NOW, updated_at: NOW }).execute()
      written.open()
      await held.opened
    })
    await written.opened
    const fine = write(app.db, async (trx) => await take(trx, id, 1))
    const request = app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title: 'Lost with its batch', content: 'C' } })
    // The request's unit queues behind the held one (its handler awaits the session's read first).
    try {
      for (const started = Date.now(); groupCommitOf(app.db)!.queued < 2; await delay(5)) {
        assert.ok(Date.now() - started < 10_000, `the request's unit not queued after 10 s (${groupCommitOf(app.db)!.queued} queued)`)
      }
    } finally {
      held.open()
    }
    await assert.rejects(breaking, (error: unknown) => error instanceof CommitFailed)
    await assert.rejects(fine, (error: unknown) => error instanceof CommitFailed)
    assertError(await request, 503, 'SERVICE_UNAVAILABLE')
    assert.equal(await stockOf(app.db, id), 10)
    assert.deepEqual(await app.db.selectFrom('posts').select('id').execute(), [])
    // The next batch commits as usual.
    assert.equal(await write(app.db, async (trx) => await take(trx, id, 1)), 9)
  })

  test('a batch holds at most 256 units: 600 at once take three commits or more', async (t) => {
    const { app, close } = await buildTestApp()
    t.after(close)
    const id = await product(app.db, 1000)
    const group = groupCommitOf(app.db)!
    const before = { ...group.stats }
    await Promise.all(Array.from({ length: 600 }, async () => await write(app.db, async (trx) => await take(trx, id, 1))))
    assert.equal(await stockOf(app.db, id), 400)
    assert.ok(group.stats.batches - before.batches >= 3, `${group.stats.batches - before.batches} commits`)
    assert.ok(group.stats.largest <= 256)
  })

  test('property: a batch ends as the same units run one after another, each answered alike', async () => {
    const { app: batched, close: closeBatched } = await buildTestApp()
    const { app: serial, close: closeSerial } = await buildTestApp()
    // One batch for the units submitted together, however slow a loaded machine runs them.
    groupCommitOf(batched.db)!.limits.ms = 60_000
    try {
      const op = fc.oneof(
        fc.record({ kind: fc.constant('take' as const), product: fc.integer({ min: 0, max: 2 }), units: fc.integer({ min: 1, max: 6 }) }),
        fc.record({ kind: fc.constant('restock' as const), product: fc.integer({ min: 0, max: 2 }), units: fc.integer({ min: 1, max: 4 }) }),
        fc.record({ kind: fc.constant('fail' as const), product: fc.integer({ min: 0, max: 2 }), units: fc.integer({ min: 1, max: 3 }) })
      )
      await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 3, maxLength: 3 }), async (ops, stocks) => {
        const run = async (db: Db, together: boolean) => {
          const ids = await Promise.all(stocks.map(async (stock) => await product(db, stock)))
          const unit = (o: typeof ops[number]) => async (trx: Executor): Promise<string> => {
            const pid = ids[o.product]!
            if (o.kind === 'take') return `left ${await take(trx, pid, o.units)}`
            const stock = await stockOf(trx, pid)
            await trx.updateTable('products').set({ stock: stock + o.units }).where('id', '=', pid).execute()
            if (o.kind === 'fail') throw new Error('failed after a write')
            return `now ${stock + o.units}`
          }
          const answer = async (promise: Promise<string>): Promise<string> => await promise.catch((error: unknown) => error instanceof ApiError ? error.code : String(error))
          const answers = together
            ? await Promise.all(ops.map(async (o) => await answer(write(db, unit(o)))))
            : await ops.reduce<Promise<string[]>>(async (done, o) => [...await done, await answer(write(db, unit(o)))], Promise.resolve([]))
          return { answers, stocks: await Promise.all(ids.map(async (pid) => await stockOf(db, pid))) }
        }
        const before = { ...groupCommitOf(batched.db)!.stats }
        const together = await run(batched.db, true)
        assert.ok(groupCommitOf(batched.db)!.stats.batches - before.batches <= 2, 'the units shared a commit')
        assert.deepEqual(together, await run(serial.db, false))
      }), { numRuns: 60, seed: 20261126 })
    } finally {
      await closeBatched()
      await closeSerial()
    }
  })
})
