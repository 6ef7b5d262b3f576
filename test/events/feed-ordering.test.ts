import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { buildTestApp, createAdmin, createUser, dialect, type TestUser } from '../helper.js'
import { createProduct, patchOrder, placeOrder } from '../products/fixtures.js'

// The feed under concurrent writes, on the real database: writers place and cancel orders side
// by side (on PostgreSQL, concurrent transactions that commit in any order) while readers poll
// the feed from the last sequence they saw. No reader may skip an event: what each reader
// collected must be exactly the final feed, numbered 1, 2, 3, … without a gap.

const WRITERS = 8
const ORDERS_PER_WRITER = 12
const READERS = 3

const { app, close } = await buildTestApp()
after(close)

async function page (user: TestUser, afterSequence: number): Promise<any[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/events?limit=100&after=${afterSequence}`, headers: user.auth })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

test(`${dialect}: ${WRITERS} writers, ${READERS} readers polling: every reader sees every event, in one gap-free order`, { timeout: 120_000 }, async (t) => {
  const admin = await createAdmin(app)
  const buyers = await Promise.all(Array.from({ length: WRITERS }, async () => await createUser(app)))
  const product = await createProduct(app, admin, { stock: 100_000 })
  let writing = true
  const writers = buyers.map(async (buyer) => {
    for (let i = 0; i < ORDERS_PER_WRITER; i += 1) {
      const order = await placeOrder(app, buyer, product.id, 1)
      if (i % 3 === 0) assert.equal((await patchOrder(app, buyer, order.id, { status: 'CANCELED' })).statusCode, 200)
    }
  })
  const readers = Array.from({ length: READERS }, async () => {
    const seen: any[] = []
    let polls = 0
    for (;;) {
      // A poll is a request from the outside: it waits for the event loop's next turn, as a
      // socket's would (injected requests on the synchronous SQLite driver could otherwise run
      // back to back within one turn and starve the writers).
      await new Promise((resolve) => setImmediate(resolve))
      const done = !writing
      const events = await page(admin, seen.at(-1)?.sequence ?? 0)
      polls += 1
      seen.push(...events)
      if (done && events.length === 0) return { seen, polls }
    }
  })
  try {
    await Promise.all(writers)
  } finally {
    // The readers stop even when a writer failed, so the failure is reported rather than a time-out.
    writing = false
    await Promise.allSettled(readers)
  }
  const collected = await Promise.all(readers)

  const all: any[] = []
  for (let batch = await page(admin, 0); batch.length > 0; batch = await page(admin, all.at(-1).sequence)) all.push(...batch)
  all.forEach((event, i) => { assert.equal(event.sequence, i + 1, 'numbered 1, 2, 3, … in the feed') })
  const cancels = Math.ceil(ORDERS_PER_WRITER / 3)
  // Each order: order.created + product.updated; each cancellation: order.canceled + product.updated.
  const expected = 1 + WRITERS + 1 + WRITERS * (2 * ORDERS_PER_WRITER + 2 * cancels)
  assert.equal(all.length, expected)
  for (const { seen } of collected) assert.deepEqual(seen.map((e) => e.id), all.map((e) => e.id), 'a reader saw every event, in the feed\'s order')
  // The product's stock as the events tell it ends where the product is.
  const stockEvents = all.filter((e) => e.type === 'product.updated')
  assert.equal(stockEvents.at(-1).data.stock, (await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })).json().stock)
  t.diagnostic(`figures ${JSON.stringify({ dialect, events: all.length, polls: collected.map((c) => c.polls) })}`)
})
