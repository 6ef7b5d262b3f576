import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, sendRaw } from '../helper.js'
import { createProduct, postOrder, stockOf } from '../products/fixtures.js'
import { write } from '../../src/db/write.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)

let counter = 0
const newKey = () => `key-${++counter}-${Date.now()}`
const ordersOf = async (productId: number) => (await app.db.selectFrom('orders').select('id').where('product_id', '=', BigInt(productId)).execute()).length

describe('Idempotency-Key on POST /v1/orders', () => {
  test('a retry with the same key and body: the same 201 and body again, Idempotent-Replayed: true, nothing created', async () => {
    const product = await createProduct(app, admin, { stock: 10 })
    const key = newKey()
    const first = await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key })
    assert.equal(first.statusCode, 201, first.body)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    for (let i = 0; i < 2; i++) {
      const again = await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key })
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      assert.equal(again.headers.location, first.headers.location)
      assert.equal(again.headers.etag, first.headers.etag)
    }
    assert.equal(await ordersOf(product.id), 1)
    assert.equal(await stockOf(app, product.id), 8)
  })

  test('the same request written differently (member order, read-only members) is the same request', async () => {
    const product = await createProduct(app, admin, { stock: 10 })
    const key = newKey()
    const first = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
    const again = await sendRaw(app, 'POST', '/v1/orders', `{"quantity": 1, "status": "PAID", "productId": ${product.id}}`, { ...user.auth, 'idempotency-key': key })
    assert.equal(again.statusCode, 201)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.body, first.body)
  })

  test('the replay is the first response, even after the order has changed', async () => {
    const product = await createProduct(app, admin, { stock: 10 })
    const key = newKey()
    const first = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
    await app.inject({ method: 'PATCH', url: `/v1/orders/${first.json().id}`, headers: user.auth, payload: { status: 'CANCELED' } })
    const again = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
    assert.equal(again.body, first.body)
    assert.equal(again.json().status, 'PAID')
    assert.equal(await stockOf(app, product.id), 10)
  })

  test('the same key with another body: 422 IDEMPOTENCY_KEY_REUSED, nothing created', async () => {
    const product = await createProduct(app, admin, { stock: 10 })
    const otherProduct = await createProduct(app, admin, { stock: 10 })
    const key = newKey()
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })).statusCode, 201)
    assertError(await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key }), 422, 'IDEMPOTENCY_KEY_REUSED')
    assertError(await postOrder(app, user, { productId: otherProduct.id, quantity: 1 }, { 'idempotency-key': key }), 422, 'IDEMPOTENCY_KEY_REUSED')
    assert.equal(await ordersOf(product.id), 1)
    assert.equal(await ordersOf(otherProduct.id), 0)
    assert.equal(await stockOf(app, product.id), 9)
  })

  test('a business refusal is stored and replayed too; a new key tries again', async () => {
    const product = await createProduct(app, admin, { stock: 1 })
    const key = newKey()
    assertError(await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key }), 409, 'NOT_ENOUGH_STOCK')
    await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth, payload: { stock: 5 } })
    const replay = await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key })
    assertError(replay, 409, 'NOT_ENOUGH_STOCK')
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': newKey() })).statusCode, 201)
    const missing = newKey()
    assertError(await postOrder(app, user, { productId: 999999, quantity: 1 }, { 'idempotency-key': missing }), 404, 'PRODUCT_NOT_FOUND')
    assertError(await postOrder(app, user, { productId: 999999, quantity: 1 }, { 'idempotency-key': missing }), 404, 'PRODUCT_NOT_FOUND')
  })

  test('a request refused for its shape stores nothing: the key is still free', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const key = newKey()
    assertError(await postOrder(app, user, { productId: product.id, quantity: 0 }, { 'idempotency-key': key }), 400, 'VALIDATION_ERROR', ['quantity'])
    const res = await postOrder(app, user, { productId: product.id, quantity: 3 }, { 'idempotency-key': key })
    assert.equal(res.statusCode, 201)
    assert.equal(res.headers['idempotent-replayed'], undefined)
  })

  test('without a key every request is new', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    for (let i = 0; i < 2; i++) {
      const res = await postOrder(app, user, { productId: product.id, quantity: 1 })
      assert.equal(res.statusCode, 201)
      assert.equal(res.headers['idempotent-replayed'], undefined)
    }
    assert.equal(await ordersOf(product.id), 2)
  })

  test('keys are case-sensitive; 255 printable characters are fine', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const key = `Ab-${Date.now()}`
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })).statusCode, 201)
    const upper = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key.toUpperCase() })
    assert.equal(upper.headers['idempotent-replayed'], undefined)
    const long = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': `${'~'.repeat(250)}${Date.now() % 100000}`.padEnd(255, 'k') })
    assert.equal(long.statusCode, 201, long.body)
  })

  test('a malformed key: 400 VALIDATION_ERROR naming Idempotency-Key, nothing created', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const res = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
      assertError(res, 400, 'VALIDATION_ERROR', ['Idempotency-Key'])
    }
    assert.equal(await ordersOf(product.id), 0)
  })

  test('a malformed key and a bad body: one 400 naming every failed field, key included', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const res = await postOrder(app, user, { productId: product.id, quantity: 0, role: 'ADMIN' }, { 'idempotency-key': 'tab\there' })
    assertError(res, 400, 'VALIDATION_ERROR', ['quantity', 'role', 'Idempotency-Key'])
    const keyOnly = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': 'k'.repeat(256) })
    assert.deepEqual(keyOnly.json().errors, [{ field: 'Idempotency-Key', message: 'must be at most 255 characters' }])
    assert.equal(await ordersOf(product.id), 0)
  })

  test('an expired key (over 24 h) is as good as new', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const key = newKey()
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })).statusCode, 201)
    const record = await app.db.selectFrom('idempotency_keys').select(['created_at', 'expires_at']).where('key', '=', key).executeTakeFirstOrThrow()
    assert.equal(new Date(record.expires_at).getTime() - new Date(record.created_at).getTime(), 24 * 60 * 60 * 1000)
    await write(app.db, async (trx) => await trx.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('key', '=', key).execute())
    const res = await postOrder(app, user, { productId: product.id, quantity: 2 }, { 'idempotency-key': key })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assert.equal(await ordersOf(product.id), 2)
  })
})

describe('expired Idempotency-Key records', () => {
  test('are swept by later keyed requests, whoever they belong to', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const stale = await createUser(app)
    assert.equal((await postOrder(app, stale, { productId: product.id, quantity: 1 }, { 'idempotency-key': 'old-1' })).statusCode, 201)
    await write(app.db, async (trx) => await trx.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('user_id', '=', BigInt(stale.id)).execute())
    assert.equal((await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': newKey() })).statusCode, 201)
    const left = await app.db.selectFrom('idempotency_keys').select('id').where('user_id', '=', BigInt(stale.id)).execute()
    assert.equal(left.length, 0)
  })
})
