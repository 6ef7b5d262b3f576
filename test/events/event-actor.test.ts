import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp, createAdmin, createUser, type TestUser } from '../helper.js'
import { createProduct, placeOrder } from '../products/fixtures.js'

// Every event names who made its change: `actor` {userId, apiKeyId}. The user of a log-in token,
// the user and the key of an API key, an administrator acting on another's resource, the account
// itself at sign-up, and no one for the service's own changes.

const { app, close } = await buildTestApp()
after(close)

interface FeedEvent { type: string, resource: { type: string, id: number }, actor: { userId: number | null, apiKeyId: number | null } }

const admin = await createAdmin(app)

/** The events recorded after `from` (the feed's last sequence), as an administrator reads them. */
async function eventsAfter (from: number): Promise<FeedEvent[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/events?limit=100&after=${from}`, headers: admin.auth })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}
async function lastSequence (): Promise<number> {
  let last = 0
  for (;;) {
    const page = await app.inject({ method: 'GET', url: `/v1/events?limit=100&after=${last}`, headers: admin.auth })
    const events = page.json() as Array<{ sequence: number }>
    if (events.length === 0) return last
    last = events.at(-1)!.sequence
  }
}
async function keyOf (user: TestUser, scopes: string[]): Promise<{ id: number, auth: Record<string, string> }> {
  const res = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'bot', scopes } })
  assert.equal(res.statusCode, 201, res.body)
  return { id: res.json().id, auth: { authorization: `Bearer ${res.json().key as string}` } }
}

describe('actor on every event', () => {
  test('a sign-up is the account\'s own; a change with a log-in token names its user and no key', async () => {
    const from = await lastSequence()
    const ada = await createUser(app)
    const post = await app.inject({ method: 'POST', url: '/v1/posts', headers: ada.auth, payload: { title: 'Mine', content: 'By token' } })
    assert.equal(post.statusCode, 201)
    const events = await eventsAfter(from)
    assert.deepEqual(events.map((e) => [e.type, e.actor]), [
      ['user.created', { userId: ada.id, apiKeyId: null }],
      ['post.created', { userId: ada.id, apiKeyId: null }]
    ])
  })

  test('a change with an API key names the key and its owner; so does the key\'s own creation, by token', async () => {
    const bob = await createUser(app)
    const from = await lastSequence()
    const key = await keyOf(bob, ['posts:write'])
    const post = await app.inject({ method: 'POST', url: '/v1/posts', headers: key.auth, payload: { title: 'By key', content: 'A bot wrote this' } })
    assert.equal(post.statusCode, 201)
    const changed = await app.inject({ method: 'PATCH', url: `/v1/posts/${post.json().id as number}`, headers: key.auth, payload: { title: 'Changed by key' } })
    assert.equal(changed.statusCode, 200)
    assert.deepEqual((await eventsAfter(from)).map((e) => [e.type, e.actor]), [
      ['api_key.created', { userId: bob.id, apiKeyId: null }],
      ['post.created', { userId: bob.id, apiKeyId: key.id }],
      ['post.updated', { userId: bob.id, apiKeyId: key.id }]
    ])
  })

  test('an administrator shipping a user\'s order is named on the order\'s event, not the order\'s owner', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const carol = await createUser(app)
    const order = await placeOrder(app, carol, product.id)
    const from = await lastSequence()
    const shipped = await app.inject({ method: 'PATCH', url: `/v1/orders/${order.id}`, headers: admin.auth, payload: { status: 'SHIPPED' } })
    assert.equal(shipped.statusCode, 200, shipped.body)
    const cancelled = await app.inject({ method: 'PATCH', url: `/v1/orders/${(await placeOrder(app, carol, product.id)).id}`, headers: carol.auth, payload: { status: 'CANCELED' } })
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    const events = (await eventsAfter(from)).filter((e) => e.type !== 'product.updated' || e.resource.id === product.id)
    assert.deepEqual(events.map((e) => [e.type, e.actor]), [
      ['order.shipped', { userId: admin.id, apiKeyId: null }],
      ['order.created', { userId: carol.id, apiKeyId: null }],
      ['product.updated', { userId: carol.id, apiKeyId: null }],
      ['order.canceled', { userId: carol.id, apiKeyId: null }],
      ['product.updated', { userId: carol.id, apiKeyId: null }]
    ])
  })

  test('the service\'s own change names no one: an administrator made at start-up', async () => {
    const from = await lastSequence()
    await createAdmin(app)
    const events = await eventsAfter(from)
    assert.deepEqual(events.map((e) => [e.type, e.actor]), [['user.created', { userId: null, apiKeyId: null }]])
  })

  test('a user reads the actor of the events about them, as the feed sends it: ids as numbers', async () => {
    const dave = await createUser(app)
    const res = await app.inject({ method: 'GET', url: '/v1/events?limit=100&type=user.created', headers: dave.auth })
    const own = (res.json() as FeedEvent[]).filter((e) => e.resource.id === dave.id)
    assert.deepEqual(own.map((e) => e.actor), [{ userId: dave.id, apiKeyId: null }])
    assert.match(res.body, new RegExp(`"actor":\\{"userId":${dave.id},"apiKeyId":null\\}`))
  })
})
