import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin } from '../helper.js'
import { BAD_IDS, createProduct } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const product = await createProduct(app, admin, { name: 'Lamp', category: 'HOME', price: 4200, stock: 7 })

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

describe('GET /v1/products/{id}', () => {
  test('public: 200 with the representation and a strong ETag', async () => {
    const res = await get(`/v1/products/${product.id}`)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), product)
    assert.match(String(res.headers.etag), /^"[^"]+"$/)
  })

  test('If-None-Match with the current tag: 304 and no body; W/ and lists match too', async () => {
    const etag = String((await get(`/v1/products/${product.id}`)).headers.etag)
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await get(`/v1/products/${product.id}`, { 'if-none-match': header })
      assert.equal(res.statusCode, 304, header)
      assert.equal(res.body, '')
      assert.equal(res.headers.etag, etag)
    }
    assert.equal((await get(`/v1/products/${product.id}`, { 'if-none-match': '"stale"' })).statusCode, 200)
  })

  test('the tag changes when the representation does', async () => {
    const before = String((await get(`/v1/products/${product.id}`)).headers.etag)
    const patched = await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth, payload: { stock: 8 } })
    assert.equal(patched.statusCode, 200)
    const res = await get(`/v1/products/${product.id}`, { 'if-none-match': before })
    assert.equal(res.statusCode, 200)
    assert.notEqual(res.headers.etag, before)
    assert.equal(res.headers.etag, patched.headers.etag)
  })

  test('an unknown product: 404 PRODUCT_NOT_FOUND, up to the largest id', async () => {
    assertError(await get('/v1/products/999999'), 404, 'PRODUCT_NOT_FOUND')
    assertError(await get('/v1/products/9223372036854775807'), 404, 'PRODUCT_NOT_FOUND')
  })

  test('a malformed id: 400 VALIDATION_ERROR naming id', async () => {
    for (const id of BAD_IDS) assertError(await get(`/v1/products/${id}`), 400, 'VALIDATION_ERROR', ['id'])
  })
})
