import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct, ORDER_KEYS, postOrder, stockOf } from '../products/fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)
const other = await createUser(app)

describe('POST /v1/orders', () => {
  test('201, Location, ETag: a PAID order of the caller at price × quantity; the units leave stock', async () => {
    const product = await createProduct(app, admin, { price: 1250, stock: 10 })
    const res = await postOrder(app, user, { productId: product.id, quantity: 3 })
    assert.equal(res.statusCode, 201, res.body)
    const order = res.json()
    assert.deepEqual(Object.keys(order).sort(), ORDER_KEYS)
    assert.deepEqual({ ...order, id: 0, createdAt: '', updatedAt: '' },
      { id: 0, userId: user.id, productId: product.id, quantity: 3, totalPrice: 3750, status: 'PAID', createdAt: '', updatedAt: '' })
    assert.equal(order.updatedAt, order.createdAt)
    assert.equal(res.headers.location, `/v1/orders/${order.id}`)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    const read = await app.inject({ method: 'GET', url: res.headers.location as string, headers: user.auth })
    assert.deepEqual(read.json(), order)
    assert.equal(read.headers.etag, res.headers.etag)
    assert.equal(await stockOf(app, product.id), 7)
  })

  test('the largest total is exact: 1,000,000,000 × 1000', async () => {
    const product = await createProduct(app, admin, { price: 1_000_000_000, stock: 1000 })
    const res = await postOrder(app, user, { productId: product.id, quantity: 1000 })
    assert.equal(res.statusCode, 201, res.body)
    assert.match(res.body, /"totalPrice":1000000000000[,}]/)
    assert.equal(await stockOf(app, product.id), 0)
  })

  test('userId, status and totalPrice cannot be set: read-only members are accepted and ignored', async () => {
    const product = await createProduct(app, admin, { price: 100, stock: 5 })
    const res = await postOrder(app, user, { productId: product.id, quantity: 2, userId: other.id, status: 'SHIPPED', totalPrice: 1, id: 1, createdAt: 'x', updatedAt: 'y' })
    assert.equal(res.statusCode, 201, res.body)
    const order = res.json()
    assert.equal(order.userId, user.id)
    assert.equal(order.status, 'PAID')
    assert.equal(order.totalPrice, 200)
  })

  test('an admin may order too', async () => {
    const product = await createProduct(app, admin, { stock: 1 })
    const res = await postOrder(app, admin, { productId: product.id, quantity: 1 })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().userId, admin.id)
  })

  test('an unknown product: 404 PRODUCT_NOT_FOUND', async () => {
    assertError(await postOrder(app, user, { productId: 999999, quantity: 1 }), 404, 'PRODUCT_NOT_FOUND')
    assertError(await postOrder(app, user, { productId: Number.MAX_SAFE_INTEGER, quantity: 1 }), 404, 'PRODUCT_NOT_FOUND')
  })

  test('a product not on sale: 409 PRODUCT_NOT_ON_SALE, even without stock; nothing changes', async () => {
    const product = await createProduct(app, admin, { stock: 5, onSale: false })
    assertError(await postOrder(app, user, { productId: product.id, quantity: 1 }), 409, 'PRODUCT_NOT_ON_SALE')
    const empty = await createProduct(app, admin, { stock: 0, onSale: false })
    assertError(await postOrder(app, user, { productId: empty.id, quantity: 1 }), 409, 'PRODUCT_NOT_ON_SALE')
    assert.equal(await stockOf(app, product.id), 5)
  })

  test('not enough stock: 409 NOT_ENOUGH_STOCK and the stock is untouched; exactly the stock is fine', async () => {
    const product = await createProduct(app, admin, { stock: 4 })
    assertError(await postOrder(app, user, { productId: product.id, quantity: 5 }), 409, 'NOT_ENOUGH_STOCK')
    assert.equal(await stockOf(app, product.id), 4)
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 4 })).statusCode, 201)
    assert.equal(await stockOf(app, product.id), 0)
    assertError(await postOrder(app, user, { productId: product.id, quantity: 1 }), 409, 'NOT_ENOUGH_STOCK')
  })

  test('putting a product back on sale makes it orderable again', async () => {
    const product = await createProduct(app, admin, { stock: 2, onSale: false })
    assertError(await postOrder(app, user, { productId: product.id, quantity: 1 }), 409, 'PRODUCT_NOT_ON_SALE')
    await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth, payload: { onSale: true } })
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 1 })).statusCode, 201)
  })

  test('anonymous: 401 whatever the body, before validation', async () => {
    assertError(await postOrder(app, undefined, { productId: 1, quantity: 1 }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await postOrder(app, undefined, { role: 'ADMIN' }), 401, 'AUTHENTICATION_REQUIRED')
  })
})
