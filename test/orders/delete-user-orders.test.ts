import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct, placeOrder, postOrder } from '../products/fixtures.js'

// DELETE /v1/users/{id}: the user's orders (and idempotency records) go with the user.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

const rowsOf = async (table: 'orders' | 'idempotency_keys', userId: number) =>
  (await app.db.selectFrom(table).select('id').where('user_id', '=', BigInt(userId)).execute()).length

describe('deleting a user', () => {
  test('deletes their orders and idempotency records; other users\' orders stay', async () => {
    const product = await createProduct(app, admin, { stock: 20 })
    const leaving = await createUser(app)
    const staying = await createUser(app)
    const gone = [await placeOrder(app, leaving, product.id, 1), await placeOrder(app, leaving, product.id, 2)]
    assert.equal((await postOrder(app, leaving, { productId: product.id, quantity: 1 }, { 'idempotency-key': 'k-1' })).statusCode, 201)
    const kept = await placeOrder(app, staying, product.id, 1)
    assert.equal(await rowsOf('orders', leaving.id), 3)
    assert.equal(await rowsOf('idempotency_keys', leaving.id), 1)

    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${leaving.id}`, headers: leaving.auth })).statusCode, 204)

    for (const order of gone) {
      assertError(await app.inject({ method: 'GET', url: `/v1/orders/${order.id}`, headers: admin.auth }), 404, 'ORDER_NOT_FOUND')
    }
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${leaving.id}/orders`, headers: admin.auth }), 404, 'USER_NOT_FOUND')
    assert.equal(await rowsOf('orders', leaving.id), 0)
    assert.equal(await rowsOf('idempotency_keys', leaving.id), 0)
    const read = await app.inject({ method: 'GET', url: `/v1/orders/${kept.id}`, headers: staying.auth })
    assert.deepEqual(read.json(), kept)
  })
})
