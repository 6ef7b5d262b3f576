import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct, patchOrder, placeOrder, stockOf } from '../products/fixtures.js'

const { app, url, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const owner = await createUser(app)
const stranger = await createUser(app)

const readOrder = async (id: number) => (await app.inject({ method: 'GET', url: `/v1/orders/${id}`, headers: admin.auth })).json()

describe('PATCH /v1/orders/{id} {"status": "CANCELED"}', () => {
  test('the owner cancels a PAID order: 200 CANCELED, the units go back to stock', async () => {
    const product = await createProduct(app, admin, { stock: 10 })
    const order = await placeOrder(app, owner, product.id, 4)
    assert.equal(await stockOf(app, product.id), 6)
    const res = await patchOrder(app, owner, order.id, { status: 'CANCELED' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual({ ...(res.json() as object), updatedAt: '' }, { ...order, status: 'CANCELED', updatedAt: '' })
    assert.ok(res.json().updatedAt >= order.updatedAt)
    assert.equal(await stockOf(app, product.id), 10)
    const read = await app.inject({ method: 'GET', url: `/v1/orders/${order.id}`, headers: owner.auth })
    assert.equal(read.headers.etag, res.headers.etag)
  })

  test('cancel twice: the second is 409 ORDER_CANNOT_CANCEL and the stock is restored once', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 2)
    assert.equal((await patchOrder(app, owner, order.id, { status: 'CANCELED' })).statusCode, 200)
    assertError(await patchOrder(app, owner, order.id, { status: 'CANCELED' }), 409, 'ORDER_CANNOT_CANCEL')
    assert.equal(await stockOf(app, product.id), 5)
  })

  test('10 simultaneous cancellations over real HTTP: one 200, nine 409, stock restored once', async () => {
    const product = await createProduct(app, admin, { stock: 3 })
    const order = await placeOrder(app, owner, product.id, 3)
    const base = await url()
    const results = await Promise.all(Array.from({ length: 10 }, async () => {
      const res = await fetch(`${base}/v1/orders/${order.id}`, {
        method: 'PATCH', headers: { 'content-type': 'application/json', ...owner.auth }, body: JSON.stringify({ status: 'CANCELED' })
      })
      return { status: res.status, code: (await res.json() as { code?: string }).code }
    }))
    assert.equal(results.filter((r) => r.status === 200).length, 1)
    assert.equal(results.filter((r) => r.status === 409 && r.code === 'ORDER_CANNOT_CANCEL').length, 9)
    assert.equal(await stockOf(app, product.id), 3)
  })

  test('a shipped order cannot be canceled: 409, status and stock unchanged', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 1)
    assert.equal((await patchOrder(app, admin, order.id, { status: 'SHIPPED' })).statusCode, 200)
    assertError(await patchOrder(app, owner, order.id, { status: 'CANCELED' }), 409, 'ORDER_CANNOT_CANCEL')
    assertError(await patchOrder(app, admin, order.id, { status: 'CANCELED' }), 409, 'ORDER_CANNOT_CANCEL')
    assert.equal((await readOrder(order.id)).status, 'SHIPPED')
    assert.equal(await stockOf(app, product.id), 4)
  })

  test('an admin cancels someone else\'s order', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 5)
    const res = await patchOrder(app, admin, order.id, { status: 'CANCELED' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().userId, owner.id)
    assert.equal(await stockOf(app, product.id), 5)
  })

  test('another user: 404 ORDER_NOT_FOUND, the same bytes as a missing order; nothing changes', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 1)
    const withoutRequestId = (body: string) => body.replace(/"requestId":"[^"]*"/, '')
    const variants: Array<Record<string, string>> = [{}, { 'if-match': '"stale"' }]
    for (const headers of variants) {
      const theirs = await patchOrder(app, stranger, order.id, { status: 'CANCELED' }, headers)
      const none = await patchOrder(app, stranger, 9_000_000_000 + order.id, { status: 'CANCELED' }, headers)
      assertError(theirs, 404, 'ORDER_NOT_FOUND')
      assert.equal(theirs.headers['content-type'], none.headers['content-type'])
      assert.equal(withoutRequestId(theirs.body), withoutRequestId(none.body))
    }
    assert.equal((await readOrder(order.id)).status, 'PAID')
    assert.equal(await stockOf(app, product.id), 4)
  })

  test('If-Match: a stale tag is 412 and nothing changes; the current tag passes', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 1)
    const etag = String((await app.inject({ method: 'GET', url: `/v1/orders/${order.id}`, headers: owner.auth })).headers.etag)
    assertError(await patchOrder(app, owner, order.id, { status: 'CANCELED' }, { 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED')
    assert.equal((await readOrder(order.id)).status, 'PAID')
    assert.equal(await stockOf(app, product.id), 4)
    assert.equal((await patchOrder(app, owner, order.id, { status: 'CANCELED' }, { 'if-match': etag })).statusCode, 200)
    // The tag has moved on: the same If-Match is now stale (412 before the 409).
    assertError(await patchOrder(app, owner, order.id, { status: 'CANCELED' }, { 'if-match': etag }), 412, 'PRECONDITION_FAILED')
  })

  test('the representation read back can be sent with a new status (read-only members ignored)', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, owner, product.id, 2)
    const res = await patchOrder(app, owner, order.id, { ...order, quantity: 1, totalPrice: 1, userId: stranger.id, status: 'CANCELED' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual({ ...(res.json() as object), updatedAt: '' }, { ...order, status: 'CANCELED', updatedAt: '' })
    assert.equal(await stockOf(app, product.id), 5)
  })
})
