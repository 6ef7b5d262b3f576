import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, sendRaw } from '../helper.js'
import { BAD_IDS, createProduct, GENERIC_FORBIDDEN, readProduct } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)

const patch = (id: number | string, payload: unknown, headers: Record<string, string> = admin.auth) =>
  app.inject({ method: 'PATCH', url: `/v1/products/${id}`, headers, payload: payload as object })

describe('PATCH /v1/products/{id}', () => {
  test('changes only the members sent; updatedAt moves, createdAt does not; a fresh ETag', async () => {
    const product = await createProduct(app, admin, { name: 'Mug', price: 900, category: 'HOME', stock: 4 })
    const res = await patch(product.id, { price: 950, onSale: false })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual({ ...body, updatedAt: '' }, { ...product, price: 950, onSale: false, updatedAt: '' })
    assert.ok(body.updatedAt >= product.updatedAt)
    assert.equal(body.createdAt, product.createdAt)
    assert.deepEqual(await readProduct(app, product.id), body)
    const read = await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })
    assert.equal(res.headers.etag, read.headers.etag)
  })

  test('every writable member can change at once; read-only members are ignored', async () => {
    const product = await createProduct(app, admin)
    const res = await patch(product.id, { name: 'Renamed', price: 1, category: 'SPORTS', stock: 0, onSale: false, id: 12345, createdAt: 'x' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual({ ...(res.json() as object), updatedAt: '' }, { ...product, name: 'Renamed', price: 1, category: 'SPORTS', stock: 0, onSale: false, updatedAt: '' })
  })

  test('application/merge-patch+json is accepted', async () => {
    const product = await createProduct(app, admin)
    const res = await sendRaw(app, 'PATCH', `/v1/products/${product.id}`, '{"stock": 42}', { ...admin.auth, 'content-type': 'application/merge-patch+json' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().stock, 42)
  })

  test('no writable member, or nothing at all: 400 naming body', async () => {
    const product = await createProduct(app, admin)
    assertError(await patch(product.id, {}), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await patch(product.id, { id: product.id, updatedAt: product.updatedAt }), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth }), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await patch('abc', {}), 400, 'VALIDATION_ERROR', ['id', 'body'])
    assertError(await patch(product.id, { colour: 'red' }), 400, 'VALIDATION_ERROR', ['colour', 'body'])
  })

  test('null for a member is a validation error, not a removal', async () => {
    const product = await createProduct(app, admin)
    for (const member of ['name', 'price', 'category', 'stock', 'onSale']) {
      assertError(await patch(product.id, { [member]: null }), 400, 'VALIDATION_ERROR', [member])
    }
    assert.deepEqual(await readProduct(app, product.id), product)
  })

  test('each member is checked by the create rule; all failures at once, path included', async () => {
    const product = await createProduct(app, admin)
    assertError(await patch(product.id, { name: ' ', price: 0, category: 'toys', stock: 1_000_001, onSale: 'yes', sku: 'A1' }), 400, 'VALIDATION_ERROR',
      ['name', 'price', 'category', 'stock', 'onSale', 'sku'])
    assertError(await patch('abc', { price: '10' }), 400, 'VALIDATION_ERROR', ['id', 'price'])
    assertError(await sendRaw(app, 'PATCH', `/v1/products/${product.id}`, '{"name": "\\ud800"}', admin.auth), 400, 'VALIDATION_ERROR', ['name'])
    assert.deepEqual(await readProduct(app, product.id), product)
  })

  test('a malformed id: 400 naming id', async () => {
    for (const id of BAD_IDS) assertError(await patch(id, { stock: 1 }), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('anonymous: 401; not an admin: 403 with the generic message; nothing changes', async () => {
    const product = await createProduct(app, admin)
    assertError(await patch(product.id, { stock: 1 }, {}), 401, 'AUTHENTICATION_REQUIRED')
    const res = await patch(product.id, { stock: 1 }, user.auth)
    assertError(res, 403, 'ACCESS_DENIED')
    assert.equal(res.json().message, GENERIC_FORBIDDEN)
    assert.deepEqual(await readProduct(app, product.id), product)
  })

  test('an unknown product: 404 PRODUCT_NOT_FOUND, before the permission check', async () => {
    assertError(await patch(999999, { stock: 1 }), 404, 'PRODUCT_NOT_FOUND')
    assertError(await patch(999999, { stock: 1 }, user.auth), 404, 'PRODUCT_NOT_FOUND')
  })

  test('If-Match: a stale tag is 412 and nothing changes; the current tag passes', async () => {
    const product = await createProduct(app, admin)
    const etag = String((await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })).headers.etag)
    const first = await patch(product.id, { stock: 11 }, { ...admin.auth, 'if-match': etag })
    assert.equal(first.statusCode, 200, first.body)
    assertError(await patch(product.id, { stock: 12 }, { ...admin.auth, 'if-match': etag }), 412, 'PRECONDITION_FAILED')
    assert.equal((await readProduct(app, product.id)).stock, 11)
    const again = await patch(product.id, { stock: 13 }, { ...admin.auth, 'if-match': String(first.headers.etag) })
    assert.equal(again.statusCode, 200)
    // A weak tag never matches If-Match (strong comparison).
    assertError(await patch(product.id, { stock: 14 }, { ...admin.auth, 'if-match': `W/${String(again.headers.etag)}` }), 412, 'PRECONDITION_FAILED')
  })

  test('order of checks: 403 comes before 412', async () => {
    const product = await createProduct(app, admin)
    assertError(await patch(product.id, { stock: 1 }, { ...user.auth, 'if-match': '"stale"' }), 403, 'ACCESS_DENIED')
  })
})
