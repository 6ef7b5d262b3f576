import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct, placeOrder, type OrderJson } from '../products/fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const owner = await createUser(app)
const stranger = await createUser(app)
const product = await createProduct(app, admin, { stock: 100 })
const mine: OrderJson[] = []
for (let i = 0; i < 5; i++) mine.push(await placeOrder(app, owner, product.id, i + 1))
await placeOrder(app, stranger, product.id, 1)

const list = (url: string, headers: Record<string, string> = owner.auth) => app.inject({ method: 'GET', url, headers })

describe('GET /v1/users/{id}/orders', () => {
  test('the user lists their own orders only, newest first', async () => {
    const res = await list(`/v1/users/${owner.id}/orders`)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), [...mine].reverse())
    assert.equal(res.headers.link, undefined)
  })

  test('an admin lists anyone\'s orders', async () => {
    const res = await list(`/v1/users/${owner.id}/orders`, admin.auth)
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().length, 5)
  })

  test('a user without orders: an empty array', async () => {
    const fresh = await createUser(app)
    const res = await list(`/v1/users/${fresh.id}/orders`, fresh.auth)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), [])
  })

  test('paged like every list: Link rel="next" until the end', async () => {
    const seen: number[] = []
    let url: string | undefined = `/v1/users/${owner.id}/orders?limit=2`
    while (url !== undefined) {
      const res = await list(url)
      assert.equal(res.statusCode, 200)
      seen.push(...(res.json() as OrderJson[]).map((o) => o.id))
      const link = res.headers.link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link))?.[1]
      if (res.headers.link !== undefined) assert.ok(link?.startsWith(`/v1/users/${owner.id}/orders?limit=2&cursor=`), String(res.headers.link))
      url = link
    }
    assert.deepEqual(seen, mine.map((o) => o.id).reverse())
  })

  test('another user: 403 ACCESS_DENIED', async () => {
    assertError(await list(`/v1/users/${owner.id}/orders`, stranger.auth), 403, 'ACCESS_DENIED')
  })

  test('an unknown user: 404 USER_NOT_FOUND, before the permission check', async () => {
    assertError(await list('/v1/users/999999/orders', stranger.auth), 404, 'USER_NOT_FOUND')
    assertError(await list('/v1/users/999999/orders', admin.auth), 404, 'USER_NOT_FOUND')
  })

  test('malformed id, limit or cursor: 400 naming each, before 404 and 403', async () => {
    assertError(await list('/v1/users/abc/orders'), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await list('/v1/users/9223372036854775808/orders'), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await list('/v1/users/0/orders?limit=0'), 400, 'VALIDATION_ERROR', ['id', 'limit'])
    assertError(await list(`/v1/users/${owner.id}/orders?limit=101`, stranger.auth), 400, 'VALIDATION_ERROR', ['limit'])
    assertError(await list('/v1/users/999999/orders?cursor=nope'), 400, 'VALIDATION_ERROR', ['cursor'])
  })

  test('anonymous: 401 first', async () => {
    assertError(await list(`/v1/users/${owner.id}/orders`, {}), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await list('/v1/users/abc/orders', {}), 401, 'AUTHENTICATION_REQUIRED')
  })
})
