import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { GENERIC_FORBIDDEN, PRODUCT_KEYS, validProduct } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)

const post = (headers: Record<string, string>, payload: unknown) =>
  app.inject({ method: 'POST', url: '/v1/products', headers, payload: payload as object })

describe('POST /v1/products', () => {
  test('an admin creates a product: 201, Location, ETag, exactly the representation', async () => {
    const res = await post(admin.auth, { name: 'Trail shoes', price: 8999, category: 'SPORTS', stock: 3, onSale: false })
    assert.equal(res.statusCode, 201)
    const product = res.json()
    assert.deepEqual(Object.keys(product).sort(), PRODUCT_KEYS)
    assert.equal(typeof product.id, 'number')
    assert.deepEqual({ ...product, id: 0, createdAt: '', updatedAt: '' },
      { id: 0, name: 'Trail shoes', price: 8999, category: 'SPORTS', stock: 3, onSale: false, createdAt: '', updatedAt: '', images: [] })
    assert.match(product.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.equal(product.updatedAt, product.createdAt)
    assert.equal(res.headers.location, `/v1/products/${product.id}`)
    const read = await app.inject({ method: 'GET', url: res.headers.location as string })
    assert.deepEqual(read.json(), product)
    assert.equal(read.headers.etag, res.headers.etag)
  })

  test('stock defaults to 0 and onSale to true', async () => {
    const res = await post(admin.auth, { name: 'Tea', price: 1, category: 'FOOD' })
    assert.equal(res.statusCode, 201)
    assert.equal(res.json().stock, 0)
    assert.equal(res.json().onSale, true)
  })

  test('the limits themselves are accepted', async () => {
    const res = await post(admin.auth, { name: 'x'.repeat(100), price: 1_000_000_000, category: 'HOME', stock: 1_000_000 })
    assert.equal(res.statusCode, 201, res.body)
    const low = await post(admin.auth, { name: 'y', price: 1, category: 'HOME', stock: 0 })
    assert.equal(low.statusCode, 201, low.body)
  })

  test('read-only members are accepted and ignored', async () => {
    const res = await post(admin.auth, { ...validProduct(), id: 999999, createdAt: '2000-01-01T00:00:00.000Z', updatedAt: 'whatever' })
    assert.equal(res.statusCode, 201, res.body)
    assert.notEqual(res.json().id, 999999)
    assert.notEqual(res.json().createdAt, '2000-01-01T00:00:00.000Z')
  })

  test('valid Unicode is stored and returned exactly; an emoji counts as one character', async () => {
    const name = '\u{1F4DA}'.repeat(100)
    const res = await post(admin.auth, validProduct({ name }))
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().name, name)
    const mixed = 'Cafe\u0301 \u200F\u05E9\u05DC\u05D5\u05DD'
    const res2 = await post(admin.auth, validProduct({ name: mixed }))
    assert.equal(res2.json().name, mixed)
  })

  test('anonymous: 401, whatever the body', async () => {
    assertError(await post({}, validProduct()), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await post({}, { price: 'x' }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await post({ authorization: 'Bearer not-a-real-token-at-all-000000' }, validProduct()), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('a user who is not an admin: 403 ACCESS_DENIED with the generic message; nothing is created', async () => {
    const before = await app.inject({ method: 'GET', url: '/v1/products?limit=100' })
    const res = await post(user.auth, validProduct())
    assertError(res, 403, 'ACCESS_DENIED')
    assert.equal(res.json().message, GENERIC_FORBIDDEN)
    const after = await app.inject({ method: 'GET', url: '/v1/products?limit=100' })
    assert.equal(after.json().length, before.json().length)
  })

  test('order of checks: the shape of the request (400) comes before permission (403)', async () => {
    assertError(await post(user.auth, { name: '' }), 400, 'VALIDATION_ERROR', ['name', 'price', 'category'])
  })
})
