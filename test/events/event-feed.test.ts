import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { pruneEvents, readEventLog } from '../../src/events/event.repository.js'
import { assertError, buildTestApp, createAdmin, createUser, type TestUser } from '../helper.js'
import { createProduct, patchOrder, placeOrder } from '../products/fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

async function feed (user: TestUser, query = ''): Promise<any[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/events?limit=100${query}`, headers: user.auth })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** Every event the user may read after `after`, page by page. */
async function readAll (user: TestUser, after = 0): Promise<any[]> {
  const all: any[] = []
  for (let cursor = after; ;) {
    const page = await feed(user, `&after=${cursor}`)
    all.push(...page)
    if (page.length < 100) return all
    cursor = page[page.length - 1].sequence
  }
}

const last = async (user: TestUser): Promise<number> => (await readAll(user)).at(-1)?.sequence ?? 0

describe('GET /v1/events: what each change records', () => {
  test('every write records its event, with the representation a GET shows after it', async () => {
    const from = await last(admin)
    const user = await createUser(app, { name: 'Eve' })
    const post = (await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title: 'T', content: 'C' } })).json()
    const edited = (await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: user.auth, payload: { title: 'T2' } })).json()
    const product = await createProduct(app, admin, { stock: 3 })
    const order = await placeOrder(app, user, product.id, 1)
    const shipped = (await patchOrder(app, admin, order.id, { status: 'SHIPPED' })).json()
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}`, headers: user.auth })).statusCode, 204)
    const events = await readAll(admin, from)
    assert.deepEqual(events.map((e) => e.type), [
      'user.created', 'post.created', 'post.updated', 'product.created', 'order.created', 'product.updated', 'order.shipped', 'post.deleted'
    ])
    const [created, postCreated, postUpdated, productCreated, orderCreated, stockTaken, orderShipped, postDeleted] = events
    assert.deepEqual(created.data, { id: user.id, email: user.email, name: 'Eve', emailVerified: false, pendingEmail: null })
    assert.deepEqual(postCreated.data, post)
    assert.deepEqual(postUpdated.data, edited)
    assert.deepEqual(productCreated.data, product)
    assert.deepEqual(orderCreated.data, order)
    assert.deepEqual(stockTaken.data, (await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })).json())
    assert.deepEqual(orderShipped.data, shipped)
    assert.equal(postDeleted.data, undefined)
    assert.deepEqual(postDeleted.resource.type, 'post')
    assert.equal(postDeleted.resource.id, post.id)
    // Sequences go up by one; a resource's version grows with each of its changes.
    events.forEach((e, i) => { assert.equal(e.sequence, from + i + 1) })
    assert.ok(postCreated.resource.version < postUpdated.resource.version && postUpdated.resource.version < postDeleted.resource.version)
    for (const e of events) {
      assert.match(e.id, /^evt_[A-Za-z0-9_-]{22}$/)
      assert.ok(!Number.isNaN(Date.parse(e.occurredAt)))
      assert.deepEqual(Object.keys(e).sort(), e.type.endsWith('.deleted') ? ['actor', 'id', 'occurredAt', 'resource', 'sequence', 'type'] : ['actor', 'data', 'id', 'occurredAt', 'resource', 'sequence', 'type'])
    }
  })

  test('an event carries the very bytes the write answered, whatever the text holds', async () => {
    const from = await last(admin)
    const user = await createUser(app, { name: 'Zoë "Z" \\ Ŭ' })
    const title = 'Quotes " and \\ back, </script>, é, 🙂, a\nnew line and a \u2028'
    const created = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title, content: 'C\t"x"' } })
    const id = created.json().id
    const replaced = await app.inject({ method: 'PUT', url: `/v1/posts/${id}`, headers: user.auth, payload: { title: 'P', content: '¿' + title } })
    const patched = await app.inject({ method: 'PATCH', url: `/v1/posts/${id}`, headers: user.auth, payload: { content: 'only "this"' } })
    const product = await createProduct(app, admin, { stock: 5 })
    const ordered = await app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId: product.id, quantity: 2 } })
    const res = await app.inject({ method: 'GET', url: `/v1/events?limit=100&after=${from}`, headers: admin.auth })
    const events = res.json() as any[]
    assert.deepEqual(events.map((e) => e.type), ['user.created', 'post.created', 'post.updated', 'post.updated', 'product.created', 'order.created', 'product.updated'])
    for (const written of [created, replaced, patched, ordered]) {
      assert.ok(written.statusCode < 300, written.body)
      assert.ok(res.body.includes(`"data":${written.body}}`), `the feed holds ${written.body}`)
    }
    assert.equal(events[6].data.stock, 3)
    assert.deepEqual(events.map((e) => e.resource.id), [user.id, id, id, id, product.id, ordered.json().id, product.id])
    assert.equal(events[5].resource.type, 'order')
  })

  test('a change that is refused leaves no event', async () => {
    const from = await last(admin)
    const user = await createUser(app)
    const product = await createProduct(app, admin, { stock: 1 })
    const withAfter = await last(admin)
    assertError(await app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId: product.id, quantity: 2 } }), 409, 'NOT_ENOUGH_STOCK')
    assertError(await app.inject({ method: 'POST', url: '/v1/users', payload: { email: user.email, name: 'Dup', password: 'long enough pw' } }), 409, 'DUPLICATE_EMAIL')
    const order = await placeOrder(app, user, product.id, 1)
    assertError(await patchOrder(app, user, order.id, { status: 'SHIPPED' }), 403, 'ACCESS_DENIED')
    const events = await readAll(admin, withAfter)
    assert.deepEqual(events.map((e) => e.type), ['order.created', 'product.updated'])
    assert.ok(withAfter > from)
  })

  test('a deleted account: its posts\' post.deleted, then user.deleted', async () => {
    const user = await createUser(app)
    const posts = []
    for (const title of ['a', 'b']) posts.push((await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title, content: 'x' } })).json())
    const from = await last(admin)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth })).statusCode, 204)
    const events = await readAll(admin, from)
    assert.deepEqual(events.map((e) => [e.type, e.resource.id]), [['post.deleted', posts[0].id], ['post.deleted', posts[1].id], ['user.deleted', user.id]])
  })
})

describe('GET /v1/events: who reads what', () => {
  test('a user reads their own account and orders and the public events; not another user\'s; an admin reads all', async () => {
    const alice = await createUser(app)
    const bob = await createUser(app)
    const from = await last(admin)
    const product = await createProduct(app, admin, { stock: 5 })
    const aliceOrder = await placeOrder(app, alice, product.id, 1)
    const bobOrder = await placeOrder(app, bob, product.id, 1)
    await app.inject({ method: 'PUT', url: `/v1/users/${bob.id}`, headers: bob.auth, payload: { email: bob.email, name: 'Bobby' } })
    const seenByAlice = (await readAll(alice, from)).map((e) => `${e.type}:${e.resource.id}`)
    assert.deepEqual(seenByAlice, [`product.created:${product.id}`, `order.created:${aliceOrder.id}`, `product.updated:${product.id}`, `product.updated:${product.id}`])
    const seenByAdmin = (await readAll(admin, from)).map((e) => `${e.type}:${e.resource.id}`)
    assert.ok(seenByAdmin.includes(`order.created:${bobOrder.id}`))
    assert.ok(seenByAdmin.includes(`user.updated:${bob.id}`))
  })

  test('type filter, paging with Link, and the feed read from the start', async () => {
    const user = await createUser(app)
    const product = await createProduct(app, admin, { stock: 10 })
    for (let i = 0; i < 3; i += 1) await placeOrder(app, user, product.id, 1)
    const orders = await feed(user, '&type=order.created')
    assert.equal(orders.length, 3)
    assert.ok(orders.every((e) => e.type === 'order.created'))
    assert.deepEqual((await feed(user, '&type=user.created')).map((e) => e.resource.id), [user.id])
    const first = await app.inject({ method: 'GET', url: '/v1/events?limit=2&type=order.created', headers: user.auth })
    assert.equal(first.json().length, 2)
    const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))
    assert.ok(link, String(first.headers.link))
    assert.match(link[1]!, /after=\d+/)
    assert.match(link[1]!, /type=order.created/)
    const second = await app.inject({ method: 'GET', url: link[1]!, headers: user.auth })
    assert.deepEqual(second.json().map((e: any) => e.id), [orders[2].id])
    assert.equal(second.headers.link, undefined)
  })

  test('bad parameters: 400 naming each; no token: 401', async () => {
    const user = await createUser(app)
    const get = async (query: string, auth = user.auth) => await app.inject({ method: 'GET', url: `/v1/events${query}`, headers: auth })
    assertError(await get('?after=-1'), 400, 'VALIDATION_ERROR', ['after'])
    assertError(await get('?after=abc'), 400, 'VALIDATION_ERROR', ['after'])
    assertError(await get('?after=99999999999999999999'), 400, 'VALIDATION_ERROR', ['after'])
    assertError(await get('?limit=0'), 400, 'VALIDATION_ERROR', ['limit'])
    assertError(await get('?after=1.5'), 400, 'VALIDATION_ERROR', ['after'])
    assertError(await get('?after=9007199254740992'), 400, 'VALIDATION_ERROR', ['after'])
    assertError(await get('?limit=101&type=nope'), 400, 'VALIDATION_ERROR', ['limit', 'type'])
    assertError(await get('?type=order.created,order.canceled'), 400, 'VALIDATION_ERROR', ['type'])
    assertError(await get('?type='), 400, 'VALIDATION_ERROR', ['type'])
    assertError(await app.inject({ method: 'GET', url: '/v1/events' }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await get('', { authorization: 'Bearer nope' }), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('an after older than the events kept is 410 EVENTS_EXPIRED; without after, the feed starts at the oldest kept', async () => {
    const user = await createUser(app)
    const through = await last(admin)
    // Wait until the dispatcher has fanned everything out (only such events are pruned).
    for (let i = 0; (await readEventLog(app.db)).fannedOutThrough < BigInt(through); i += 1) {
      assert.ok(i < 400, 'fanned out')
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    // Pruned as if 40 days had passed with 30 days kept.
    await pruneEvents(app.db, 30 * 86_400_000, Date.now() + 40 * 86_400_000)
    assert.equal((await readEventLog(app.db)).prunedThrough, BigInt(through))
    assertError(await app.inject({ method: 'GET', url: '/v1/events?after=0', headers: user.auth }), 410, 'EVENTS_EXPIRED')
    assertError(await app.inject({ method: 'GET', url: `/v1/events?after=${through - 1}`, headers: user.auth }), 410, 'EVENTS_EXPIRED')
    assert.equal((await app.inject({ method: 'GET', url: `/v1/events?after=${through}`, headers: user.auth })).statusCode, 200)
    const renamed = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'After the prune' } })
    assert.equal(renamed.statusCode, 200, renamed.body)
    const kept = await feed(user)
    assert.deepEqual(kept.map((e) => e.type), ['user.updated'])
    assert.equal(kept[0].sequence, through + 1)
  })
})
