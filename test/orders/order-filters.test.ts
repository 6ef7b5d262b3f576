import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, type TestUser } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { createProduct, type OrderJson } from '../products/fixtures.js'
import { write } from '../../src/db/write.js'

// GET /v1/orders (yours; everyone's for an admin) and GET /v1/users/{id}/orders with filters and
// sort: each against the same rule applied in memory, always within what the caller may see.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const alice = await createUser(app)
const bob = await createUser(app)
const lamp = await createProduct(app, admin, { name: 'Lamp', stock: 100 })
const desk = await createProduct(app, admin, { name: 'Desk', stock: 100 })

// Orders written straight into the table, so that their times are known to the millisecond.
const at = (minute: number) => new Date(Date.UTC(2026, 10, 25, 10, minute)).toISOString()
const specs: Array<[TestUser, number, 'PAID' | 'SHIPPED' | 'CANCELED', number]> = [
  [alice, lamp.id, 'PAID', 0], [alice, desk.id, 'SHIPPED', 1], [bob, lamp.id, 'PAID', 2], [alice, lamp.id, 'CANCELED', 3],
  [bob, desk.id, 'SHIPPED', 4], [alice, desk.id, 'PAID', 5], [alice, lamp.id, 'PAID', 5], [bob, lamp.id, 'CANCELED', 6]
]
for (const [user, productId, status, minute] of specs) {
  await write(app.db, async (trx) => await trx.insertInto('orders').values({ user_id: user.id, product_id: productId, quantity: 1, total_price: 1500, status, created_at: at(minute), updated_at: at(minute) }).execute())
}
const all: OrderJson[] = (await app.inject({ method: 'GET', url: '/v1/orders?limit=100', headers: admin.auth })).json()

const walk = async (url: string, who: TestUser, limit = 2) => await walkPages<OrderJson>(app, `${url}${url.includes('?') ? '&' : '?'}limit=${limit}`, who.auth)
const ids = (orders: OrderJson[]) => orders.map((o) => o.id)
const newestFirst = (a: OrderJson, b: OrderJson) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id
const oldestFirst = (a: OrderJson, b: OrderJson) => -newestFirst(a, b)

describe('GET /v1/orders', () => {
  test('an admin lists every order, newest first; a user only their own', async () => {
    assert.equal(all.length, 8)
    assert.deepEqual(ids(await walk('/v1/orders', admin)), ids([...all].sort(newestFirst)))
    assert.deepEqual(ids(await walk('/v1/orders', alice)), ids(all.filter((o) => o.userId === alice.id).sort(newestFirst)))
    assert.deepEqual(ids(await walk('/v1/orders', bob)), ids(all.filter((o) => o.userId === bob.id).sort(newestFirst)))
  })

  test('each filter and sort, alone and together, within what the caller sees', async () => {
    const cases: Array<[string, (o: OrderJson) => boolean]> = [
      ['status=PAID', (o) => o.status === 'PAID'],
      ['status=SHIPPED&status=CANCELED', (o) => o.status !== 'PAID'],
      [`productId=${lamp.id}`, (o) => o.productId === lamp.id],
      [`createdAfter=${at(2)}`, (o) => o.createdAt > at(2)],
      [`createdBefore=${at(5)}`, (o) => o.createdAt < at(5)],
      [`createdAfter=${at(1)}&createdBefore=${at(6)}&status=PAID&productId=${lamp.id}`, (o) => o.createdAt > at(1) && o.createdAt < at(6) && o.status === 'PAID' && o.productId === lamp.id]
    ]
    for (const [query, keep] of cases) {
      for (const [who, sees] of [[admin, () => true], [alice, (o: OrderJson) => o.userId === alice.id]] as const) {
        for (const [sort, order] of [['', newestFirst], ['&sort=createdAt', oldestFirst], ['&sort=-createdAt', newestFirst]] as const) {
          const expected = ids(all.filter((o) => sees(o) && keep(o)).sort(order))
          assert.deepEqual(ids(await walk(`/v1/orders?${query}${sort}`, who)), expected, `${query}${sort} as ${who === admin ? 'admin' : 'alice'}`)
          if (who === alice) assert.deepEqual(ids(await walk(`/v1/users/${alice.id}/orders?${query}${sort}`, alice)), expected)
        }
      }
    }
  })

  test('no filter reaches another user\'s orders: bob\'s product, bob\'s statuses', async () => {
    for (const query of [`productId=${lamp.id}&status=CANCELED`, 'status=CANCELED', `createdAfter=${at(5)}`]) {
      for (const order of await walk(`/v1/orders?${query}`, alice)) assert.equal(order.userId, alice.id)
    }
    assertError(await app.inject({ method: 'GET', url: `/v1/users/${bob.id}/orders?status=PAID`, headers: alice.auth }), 403, 'ACCESS_DENIED')
  })

  test('time bounds are exclusive, exact below the millisecond, and read offsets', async () => {
    const t = at(0)
    const one = (query: string) => walk(`/v1/orders?${query}&status=PAID&productId=${lamp.id}&createdBefore=${encodeURIComponent(at(1))}`, alice)
    const first = all.find((o) => o.createdAt === t)!
    assert.deepEqual(ids(await one(`createdAfter=${t}`)), [])
    assert.deepEqual(ids(await one('createdAfter=2026-11-25T09:59:59.9995Z')), [first.id])
    assert.deepEqual(ids(await one('createdAfter=2026-11-25T10:00:00.0005Z')), [])
    assert.deepEqual(ids(await one(`createdAfter=${encodeURIComponent('2026-11-25T10:59:59.999+01:00')}`)), [first.id])
    const before = (bound: string) => walk(`/v1/orders?createdBefore=${encodeURIComponent(bound)}`, admin)
    assert.deepEqual(ids(await before(t)), [])
    assert.deepEqual(ids(await before('2026-11-25T10:00:00.0005Z')), [first.id])
    assert.deepEqual(ids(await before('2026-11-25T05:00:00.001-05:00')), [first.id])
    assert.deepEqual(ids(await before('2026-11-25t10:00:00.001z')), [first.id])
  })

  test('a cursor is bound to its sort and filters', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/orders?status=PAID&limit=1', headers: admin.auth })
    const cursor = new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
    assert.equal((await app.inject({ method: 'GET', url: `/v1/orders?status=PAID&limit=5&cursor=${cursor}`, headers: admin.auth })).statusCode, 200)
    assertError(await app.inject({ method: 'GET', url: `/v1/orders?status=SHIPPED&cursor=${cursor}`, headers: admin.auth }), 400, 'CURSOR_MISMATCH')
    assertError(await app.inject({ method: 'GET', url: `/v1/orders?status=PAID&sort=createdAt&cursor=${cursor}`, headers: admin.auth }), 400, 'CURSOR_MISMATCH')
  })

  test('without a token: 401', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/orders' }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'GET', url: '/v1/orders?status=nope' }), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('bad parameters: 400 naming each, all at once', async () => {
    const bad = async (query: string, fields: string[]) => {
      for (const url of [`/v1/orders?${query}`, `/v1/users/${alice.id}/orders?${query}`]) {
        assertError(await app.inject({ method: 'GET', url, headers: alice.auth }), 400, 'VALIDATION_ERROR', fields)
      }
    }
    await bad('status=paid', ['status'])
    await bad('status=PAID&status=LOST', ['status'])
    await bad('status=', ['status'])
    await bad('productId=0', ['productId'])
    await bad('productId=abc', ['productId'])
    await bad('productId=1&productId=2', ['productId'])
    for (const time of ['yesterday', '2026-11-25', '2026-11-25T10:00:00', '2026-02-30T00:00:00Z', '2026-11-25T24:00:00Z', '2026-11-25T10:60:00Z', '2026-11-25T10:00:00.1234567890Z', '2026-11-25 10:00:00Z', '2026-11-25T10:00:00+1:00', '1776961234', '']) {
      await bad(`createdAfter=${encodeURIComponent(time)}`, ['createdAfter'])
      await bad(`createdBefore=${encodeURIComponent(time)}`, ['createdBefore'])
    }
    await bad(`createdAfter=${at(5)}&createdBefore=${at(5)}`, ['createdAfter'])
    await bad(`createdAfter=${at(6)}&createdBefore=${at(5)}`, ['createdAfter'])
    await bad('sort=views', ['sort'])
    await bad('sort=createdAt&sort=-createdAt', ['sort'])
    await bad('userId=3', ['userId'])
    await bad('status=x&productId=x&createdAfter=x&createdBefore=x&sort=x&limit=0&cursor=x&q=1', ['status', 'productId', 'createdAfter', 'createdBefore', 'sort', 'limit', 'cursor', 'q'])
  })
})
