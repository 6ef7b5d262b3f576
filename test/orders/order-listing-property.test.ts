import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import fc from 'fast-check'
import { buildTestApp, createAdmin, createUser, dialect } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { plansOf } from '../query-plans.js'
import { instant, timeBound } from '../time-bounds.js'
import { createProduct, type OrderJson } from '../products/fixtures.js'
import { orderListing, ORDER_SORTS } from '../../src/orders/order.listing.js'
import { listOrdersQueries } from '../../src/orders/order.repository.js'
import { write } from '../../src/db/write.js'

// Property: for random orders of two users and a random list (filters, sort, page size, an admin
// or a user), walking every page returns exactly what a plain filter and sort in memory returns,
// while orders are added and removed between pages. Then the plans: every list and filter is a
// range of an index, never a scan of the whole table.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const users = [await createUser(app), await createUser(app)]
const products = [await createProduct(app, admin, { stock: 100 }), await createProduct(app, admin, { stock: 100 })]

const STATUSES = ['PAID', 'SHIPPED', 'CANCELED'] as const
const order = fc.record({
  user: fc.constantFrom(0, 1),
  product: fc.constantFrom(0, 1),
  status: fc.constantFrom(...STATUSES),
  second: fc.integer({ min: 0, max: 4 })
})
type Spec = typeof order extends fc.Arbitrary<infer T> ? T : never

// Each filter is left out half the time (fast-check's default leaves one out 1 time in 5), so
// that lists of several filters still hold rows often enough to judge.
const listing = fc.record({
  status: fc.option(fc.uniqueArray(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 2 }),
  product: fc.option(fc.constantFrom(0, 1), { nil: undefined, freq: 2 }),
  after: fc.option(timeBound, { nil: undefined, freq: 2 }),
  before: fc.option(timeBound, { nil: undefined, freq: 2 }),
  sort: fc.option(fc.constantFrom(...ORDER_SORTS), { nil: undefined, freq: 2 }),
  who: fc.constantFrom('admin', 'user')
}).filter((l) => l.after === undefined || l.before === undefined || l.after.ms < l.before.ms)
type Listing = typeof listing extends fc.Arbitrary<infer T> ? T : never

async function insert (spec: Spec): Promise<void> {
  const at = instant(spec.second)
  await write(app.db, async (trx) => await trx.insertInto('orders').values({ user_id: users[spec.user]!.id, product_id: products[spec.product]!.id, quantity: 1, total_price: 1500, status: spec.status, created_at: at, updated_at: at }).execute())
}

async function all (): Promise<OrderJson[]> {
  const rows = await app.db.selectFrom('orders').selectAll().execute()
  return rows.map((r) => ({ id: Number(r.id), userId: Number(r.user_id), productId: Number(r.product_id), quantity: Number(r.quantity), totalPrice: Number(r.total_price), status: r.status, createdAt: new Date(r.created_at).toISOString(), updatedAt: new Date(r.updated_at).toISOString() }))
}

function keeps (l: Listing): (o: OrderJson) => boolean {
  return (o) => (l.who === 'admin' || o.userId === users[0]!.id) &&
    (l.status === undefined || (l.status as readonly string[]).includes(o.status)) &&
    (l.product === undefined || o.productId === products[l.product]!.id) &&
    (l.after === undefined || Date.parse(o.createdAt) > l.after.ms) &&
    (l.before === undefined || Date.parse(o.createdAt) < l.before.ms)
}

const compare = (sort: Listing['sort']) => (a: OrderJson, b: OrderJson) => (sort === 'createdAt' ? 1 : -1) * (a.createdAt.localeCompare(b.createdAt) || a.id - b.id)

function queryOf (l: Listing, limit: number): string {
  const params = new URLSearchParams()
  for (const s of l.status ?? []) params.append('status', s)
  if (l.product !== undefined) params.set('productId', String(products[l.product]!.id))
  if (l.after !== undefined) params.set('createdAfter', l.after.text)
  if (l.before !== undefined) params.set('createdBefore', l.before.text)
  if (l.sort !== undefined) params.set('sort', l.sort)
  params.set('limit', String(limit))
  return params.toString()
}

test('every page walk equals the in-memory filter and sort, under inserts and deletes between pages', async () => {
  await fc.assert(fc.asyncProperty(
    fc.array(order, { maxLength: 25 }), listing, fc.integer({ min: 1, max: 6 }),
    fc.array(fc.oneof(order.map((spec) => ({ insert: spec })), fc.nat().map((n) => ({ remove: n }))), { maxLength: 8 }),
    async (specs, l, limit, changes) => {
      await write(app.db, async (trx) => await trx.deleteFrom('orders').execute())
      for (const spec of specs) await insert(spec)
      const before = await all()
      const removed = new Set<number>()
      const who = l.who === 'admin' ? admin : users[0]!
      const walked = await walkPages<OrderJson>(app, `/v1/orders?${queryOf(l, limit)}`, who.auth, async (page) => {
        const change = changes[page]
        if (change === undefined) return
        if ('insert' in change) await insert(change.insert)
        else {
          const present = (await all()).map((o) => o.id)
          const victim = present[change.remove % Math.max(1, present.length)]
          if (victim !== undefined) {
            await write(app.db, async (trx) => await trx.deleteFrom('orders').where('id', '=', BigInt(victim)).execute())
            removed.add(victim)
          }
        }
      })
      const keep = keeps(l)
      const order = compare(l.sort)
      for (let i = 1; i < walked.length; i++) assert.ok(order(walked[i - 1]!, walked[i]!) < 0, `out of order at ${i}`)
      for (const o of walked) assert.ok(keep(o), `does not match: ${JSON.stringify(o)} for ${JSON.stringify(l)}`)
      const expected = before.filter((o) => keep(o) && !removed.has(o.id)).sort(order).map((o) => o.id)
      const walkedIds = walked.map((o) => o.id)
      assert.deepEqual(walkedIds.filter((id) => expected.includes(id)), expected, JSON.stringify(l))
    }
  ), { numRuns: 80 })
})

test('the plan of every list and filter is a range of an index', async () => {
  await write(app.db, async (trx) => await trx.deleteFrom('orders').execute())
  const rows = Array.from({ length: 2000 }, (_, i) => ({ user_id: users[i % 2]!.id, product_id: products[i % 2]!.id, quantity: 1, total_price: 1500, status: STATUSES[i % 3]!, created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(), updated_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() }))
  for (let i = 0; i < rows.length; i += 500) await write(app.db, async (trx) => await trx.insertInto('orders').values(rows.slice(i, i + 500)).execute())
  await write(app.db, async (trx) => await sql`analyze`.execute(trx))
  const filters = [{}, { status: ['PAID' as const] }, { status: ['PAID' as const, 'SHIPPED' as const] }, { productId: String(products[0]!.id) }, { createdAfter: '2026-01-01T10:00:00Z', createdBefore: '2026-01-01T20:00:00Z' }]
  for (const filter of filters) {
    for (const sort of ORDER_SORTS) {
      for (const owner of [undefined, BigInt(users[0]!.id)]) {
        for (const deep of [false, true]) {
          const position = deep ? { key: '2026-01-01T12:00:00.000Z', id: 500n, tied: true } : undefined
          const queries = listOrdersQueries(app.db, dialect, orderListing({ ...filter, sort }), owner, 21, position)
          const where = `${JSON.stringify(filter)} ${sort} ${owner === undefined ? 'everyone' : 'one user'} ${deep ? 'deep' : 'first'}`
          for (const plan of (await plansOf(app, queries)).map((lines) => lines.join('\n'))) {
            if (dialect === 'sqlite') {
              assert.ok(!/^SCAN orders$/m.test(plan), `a full scan: ${where}\n${plan}`)
              assert.ok(/USING (COVERING )?INDEX orders_(user_id_)?created_at_id_idx/.test(plan) || /^SEARCH orders USING/m.test(plan), `not a range of an index: ${where}\n${plan}`)
            } else {
              assert.ok(!plan.includes('Seq Scan on orders'), `a full scan: ${where}\n${plan}`)
              const inOrder = /Index Scan( Backward)? using orders_(user_id_)?created_at_id_idx/.test(plan) && !/^\s*(->\s*)?Sort\b/m.test(plan)
              assert.ok(inOrder || plan.includes('Index Cond'), `not a range of an index: ${where}\n${plan}`)
            }
          }
        }
      }
    }
  }
})
