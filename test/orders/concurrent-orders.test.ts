import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct, stockOf } from '../products/fixtures.js'

// Stock never goes below zero under any concurrency (docs/api.md), over real HTTP.

const { app, url, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const users = await Promise.all(Array.from({ length: 4 }, async () => await createUser(app)))

async function orderAll (productId: number, count: number, quantity: number): Promise<Array<{ status: number, body: { code?: string, quantity?: number } }>> {
  const base = await url()
  return await Promise.all(Array.from({ length: count }, async (_, i) => {
    const res = await fetch(`${base}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...users[i % users.length]!.auth },
      body: JSON.stringify({ productId, quantity })
    })
    return { status: res.status, body: await res.json() as { code?: string } }
  }))
}

async function ordersOf (productId: number): Promise<number> {
  const rows = await app.db.selectFrom('orders').select('id').where('product_id', '=', BigInt(productId)).execute()
  return rows.length
}

describe('simultaneous orders', () => {
  test('12 orders for the last 5 units: exactly five 201s, seven 409 NOT_ENOUGH_STOCK, stock 0', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const results = await orderAll(product.id, 12, 1)
    assert.equal(results.filter((r) => r.status === 201).length, 5)
    const refused = results.filter((r) => r.status === 409)
    assert.equal(refused.length, 7)
    for (const r of refused) assert.equal(r.body.code, 'NOT_ENOUGH_STOCK')
    assert.equal(await stockOf(app, product.id), 0)
    assert.equal(await ordersOf(product.id), 5)
  })

  test('12 orders of 2 units for 5 units: two succeed and 1 unit is left', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const results = await orderAll(product.id, 12, 2)
    assert.equal(results.filter((r) => r.status === 201).length, 2)
    assert.equal(results.filter((r) => r.status === 409 && r.body.code === 'NOT_ENOUGH_STOCK').length, 10)
    assert.equal(await stockOf(app, product.id), 1)
  })

  test('orders and cancellations racing: stock always equals initial minus live orders', async () => {
    const product = await createProduct(app, admin, { stock: 6 })
    const placed = (await orderAll(product.id, 6, 1)).filter((r) => r.status === 201) as Array<{ body: { id?: number } }>
    assert.equal(placed.length, 6)
    const base = await url()
    const [cancels, more] = await Promise.all([
      Promise.all(placed.slice(0, 3).map(async (r) => await fetch(`${base}/v1/orders/${r.body.id}`, {
        method: 'PATCH', headers: { 'content-type': 'application/json', ...admin.auth }, body: JSON.stringify({ status: 'CANCELED' })
      }))),
      orderAll(product.id, 8, 1)
    ])
    assert.ok(cancels.every((r) => r.status === 200))
    const won = more.filter((r) => r.status === 201).length
    assert.ok(more.every((r) => r.status === 201 || r.body.code === 'NOT_ENOUGH_STOCK'))
    const live = await app.db.selectFrom('orders').select('id').where('product_id', '=', BigInt(product.id)).where('status', '=', 'PAID').execute()
    assert.equal(live.length, 3 + won)
    assert.equal(await stockOf(app, product.id), 6 - live.length)
  })
})
