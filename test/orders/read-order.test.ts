import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { BAD_IDS, createProduct, placeOrder } from '../products/fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const owner = await createUser(app)
const stranger = await createUser(app)
const product = await createProduct(app, admin, { stock: 50 })
const order = await placeOrder(app, owner, product.id, 2)

const get = (id: number | string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `/v1/orders/${id}`, headers })

describe('GET /v1/orders/{id}', () => {
  test('the owner reads it: 200 with a strong ETag', async () => {
    const res = await get(order.id, owner.auth)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), order)
    assert.match(String(res.headers.etag), /^"[^"]+"$/)
  })

  test('an admin reads anyone\'s order', async () => {
    const res = await get(order.id, admin.auth)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), order)
  })

  test('If-None-Match: 304 while unchanged, 200 with a new tag once the status changes', async () => {
    const mine = await placeOrder(app, owner, product.id, 1)
    const etag = String((await get(mine.id, owner.auth)).headers.etag)
    const cached = await get(mine.id, { ...owner.auth, 'if-none-match': etag })
    assert.equal(cached.statusCode, 304)
    assert.equal(cached.body, '')
    await app.inject({ method: 'PATCH', url: `/v1/orders/${mine.id}`, headers: owner.auth, payload: { status: 'CANCELED' } })
    const fresh = await get(mine.id, { ...owner.auth, 'if-none-match': etag })
    assert.equal(fresh.statusCode, 200)
    assert.equal(fresh.json().status, 'CANCELED')
    assert.notEqual(fresh.headers.etag, etag)
  })

  test('another user: 404 ORDER_NOT_FOUND, exactly as for an order that does not exist', async () => {
    const res = await get(order.id, stranger.auth)
    assertError(res, 404, 'ORDER_NOT_FOUND')
    // A matching If-None-Match does not get around the check.
    const etag = String((await get(order.id, owner.auth)).headers.etag)
    assertError(await get(order.id, { ...stranger.auth, 'if-none-match': etag }), 404, 'ORDER_NOT_FOUND')
  })

  test('probing ids reveals nothing: someone else\'s order and a missing one answer the same bytes', async () => {
    const withoutRequestId = (body: string) => body.replace(/"requestId":"[^"]*"/, '')
    const missing = 9_000_000_000 + order.id
    const variants: Array<Record<string, string>> = [{}, { 'if-none-match': '*' }, { accept: 'application/problem+json' }]
    for (const headers of variants) {
      const theirs = await get(order.id, { ...stranger.auth, ...headers })
      const none = await get(missing, { ...stranger.auth, ...headers })
      assert.equal(theirs.statusCode, none.statusCode)
      assert.equal(theirs.headers['content-type'], none.headers['content-type'])
      assert.equal(theirs.headers.etag, undefined)
      assert.equal(withoutRequestId(theirs.body), withoutRequestId(none.body))
    }
  })

  test('an unknown order: 404 ORDER_NOT_FOUND, for anyone (existence is checked before permission)', async () => {
    assertError(await get(999999, owner.auth), 404, 'ORDER_NOT_FOUND')
    assertError(await get('9223372036854775807', stranger.auth), 404, 'ORDER_NOT_FOUND')
  })

  test('a malformed id: 400 naming id', async () => {
    for (const id of BAD_IDS) assertError(await get(id, owner.auth), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('anonymous: 401, before the id is looked at', async () => {
    assertError(await get(order.id), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await get('abc'), 401, 'AUTHENTICATION_REQUIRED')
  })
})
