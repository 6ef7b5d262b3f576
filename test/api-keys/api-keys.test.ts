import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { postgresPoolOf } from '../../src/db/database.js'
import type { Db } from '../../src/db/schema.js'
import { write } from '../../src/db/write.js'
import { MAX_LIVE_KEYS } from '../../src/api-keys/api-key.schemas.js'
import { assertError, buildAppForTest, createAdmin, createUser, type TestApp, type TestUser } from '../helper.js'
import { openStream } from '../support/sse-client.js'

// API keys: made, listed, read and revoked with a log-in token; used as `Authorization: Bearer
// rk_…`, each limited to its scopes. Each test has an app of its own (world below), closed
// after it: none depends on what another did, or on their order.

interface MadeKey { id: number, key: string, prefix: string, scopes: string[], auth: { authorization: string } }

interface World {
  t: TestApp
  admin: TestUser
  ann: TestUser
  bob: TestUser
  productId: number
  /** Makes a key for `user` with these scopes (201 asserted), with its Authorization header. */
  make: (user: TestUser, scopes: string[], extra?: Record<string, unknown>) => Promise<MadeKey>
}

/**
 * A new app for one test, closed after it: an administrator, Ann, Bob, and a product to order.
 * The test's HTTP connections (undici's, the event streams') are its own too, and are cut
 * before the app closes: the close would otherwise wait out the server's 10 s header time
 * limit on a kept-alive one.
 */
async function world (context: TestContext): Promise<World> {
  const t = await buildAppForTest(context)
  const admin = await createAdmin(t.app)
  const ann = await createUser(t.app, { name: 'Ann' })
  const bob = await createUser(t.app, { name: 'Bob' })
  const productId = (await t.app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: { name: 'Lamp', price: 100, category: 'HOME', stock: 1000 } })).json().id
  const make = async (user: TestUser, scopes: string[], extra: Record<string, unknown> = {}): Promise<MadeKey> => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: user.auth, payload: { name: 'a program', scopes, ...extra } })
    assert.equal(res.statusCode, 201, res.body)
    const body = res.json()
    return { ...body, auth: { authorization: `Bearer ${body.key as string}` } }
  }
  return { t, admin, ann, bob, productId, make }
}

const insufficient = (res: Awaited<ReturnType<TestApp['app']['inject']>>, scope: string | undefined): void => {
  assertError(res, 403, 'INSUFFICIENT_SCOPE')
  const challenge = String(res.headers['www-authenticate'])
  assert.match(challenge, /^Bearer realm="api", error="insufficient_scope"/)
  if (scope === undefined) assert.doesNotMatch(challenge, /scope=/)
  else assert.match(challenge, new RegExp(`scope="${scope}"`))
}

/**
 * Resolves once every write the app had begun has finished: on SQLite a unit queued after them
 * has committed (the group commit runs units in the order they came); on PostgreSQL no client of
 * the pool is in use or awaited (a write holds one until it has committed).
 */
async function writesSettled (db: Db): Promise<void> {
  const pool = postgresPoolOf(db)
  if (pool === undefined) {
    await write(db, async () => {})
    return
  }
  for (const started = Date.now(); pool.idleCount < pool.totalCount || pool.waitingCount > 0; await delay(5)) {
    if (Date.now() - started > 10_000) throw new Error(`the pool still busy after 10 s: ${pool.totalCount - pool.idleCount} clients in use, ${pool.waitingCount} awaited`)
  }
}

describe('API keys', () => {
  test('from a fresh account: a key with orders:read lists orders, is refused an order (403 naming orders:write), and is 401 once revoked', async (context) => {
    const { t, ann, productId, make } = await world(context)
    const made = await make(ann, ['orders:read'])
    assert.match(made.key, /^rk_[A-Za-z0-9]{38}$/)
    assert.equal(made.prefix, made.key.slice(0, 11))
    const listed = await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth })
    assert.equal(listed.statusCode, 200)
    assert.deepEqual(listed.json(), [])
    insufficient(await t.app.inject({ method: 'POST', url: '/v1/orders', headers: made.auth, payload: { productId, quantity: 1 } }), 'orders:write')
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${made.id}`, headers: ann.auth })).statusCode, 204)
    const refused = await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth })
    assertError(refused, 401, 'AUTHENTICATION_REQUIRED')
    assert.equal(refused.headers['www-authenticate'], 'Bearer realm="api"')
  })

  test('created once with its secret; read and listed without it, newest first, only by its owner (administrators included)', async (context) => {
    const { t, admin, ann, bob, make } = await world(context)
    const res = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: bob.auth, payload: { name: 'importer', scopes: ['webhooks:write', 'posts:write'], expiresAt: '2099-01-01T00:00:00Z' } })
    assert.equal(res.statusCode, 201)
    const created = res.json()
    assert.equal(res.headers.location, `/v1/api-keys/${created.id}`)
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'expiresAt', 'id', 'key', 'lastUsedAt', 'name', 'prefix', 'scopes'])
    // Stored in the order of the list of scopes.
    assert.deepEqual(created.scopes, ['posts:write', 'webhooks:write'])
    assert.equal(created.expiresAt, '2099-01-01T00:00:00.000Z')
    assert.equal(created.lastUsedAt, null)
    const second = await make(bob, ['events:read'])
    const one = await t.app.inject({ method: 'GET', url: `/v1/api-keys/${created.id}`, headers: bob.auth })
    assert.equal(one.statusCode, 200)
    const withoutSecret: Record<string, unknown> = { ...created }
    delete withoutSecret.key
    assert.deepEqual(one.json(), withoutSecret)
    const list = (await t.app.inject({ method: 'GET', url: '/v1/api-keys', headers: bob.auth })).json() as Array<{ id: number, key?: string }>
    assert.deepEqual(list.map((k) => k.id), [second.id, created.id])
    assert.ok(list.every((k) => k.key === undefined))
    // Someone else's key is not found, for an administrator too, and not in their lists.
    assertError(await t.app.inject({ method: 'GET', url: `/v1/api-keys/${created.id}`, headers: ann.auth }), 404, 'API_KEY_NOT_FOUND')
    assertError(await t.app.inject({ method: 'GET', url: `/v1/api-keys/${created.id}`, headers: admin.auth }), 404, 'API_KEY_NOT_FOUND')
    assertError(await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${created.id}`, headers: admin.auth }), 404, 'API_KEY_NOT_FOUND')
    assert.ok(((await t.app.inject({ method: 'GET', url: '/v1/api-keys', headers: admin.auth })).json() as Array<{ id: number }>).every((k) => k.id !== created.id))
    // A revoked key reads as unknown.
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${second.id}`, headers: bob.auth })).statusCode, 204)
    assertError(await t.app.inject({ method: 'GET', url: `/v1/api-keys/${second.id}`, headers: bob.auth }), 404, 'API_KEY_NOT_FOUND')
    assertError(await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${second.id}`, headers: bob.auth }), 404, 'API_KEY_NOT_FOUND')
    assertError(await t.app.inject({ method: 'GET', url: '/v1/api-keys/0', headers: bob.auth }), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('each scope opens its operations and nothing else; a write scope does not include its read scope', async (context) => {
    const { t, admin, ann, productId, make } = await world(context)
    const posts = await make(ann, ['posts:write'])
    const post = await t.app.inject({ method: 'POST', url: '/v1/posts', headers: posts.auth, payload: { title: 'By a key', content: 'C' } })
    assert.equal(post.statusCode, 201)
    assert.equal(post.json().author.id, ann.id)
    assert.equal((await t.app.inject({ method: 'PATCH', url: `/v1/posts/${post.json().id as number}`, headers: { ...posts.auth, 'content-type': 'application/merge-patch+json' }, payload: { title: 'Changed' } })).statusCode, 200)
    insufficient(await t.app.inject({ method: 'POST', url: '/v1/orders', headers: posts.auth, payload: { productId, quantity: 1 } }), 'orders:write')
    insufficient(await t.app.inject({ method: 'GET', url: '/v1/events', headers: posts.auth }), 'events:read')
    insufficient(await t.app.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers: posts.auth }), 'webhooks:read')
    // Anything anonymous may do, a key may do.
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/posts?limit=1', headers: posts.auth })).statusCode, 200)

    const orders = await make(ann, ['orders:write'])
    const order = await t.app.inject({ method: 'POST', url: '/v1/orders', headers: orders.auth, payload: { productId, quantity: 1 } })
    assert.equal(order.statusCode, 201)
    insufficient(await t.app.inject({ method: 'GET', url: `/v1/orders/${order.json().id as number}`, headers: orders.auth }), 'orders:read')
    insufficient(await t.app.inject({ method: 'GET', url: '/v1/orders', headers: orders.auth }), 'orders:read')
    assert.equal((await t.app.inject({ method: 'PATCH', url: `/v1/orders/${order.json().id as number}`, headers: orders.auth, payload: { status: 'CANCELED' } })).statusCode, 200)

    const reader = await make(ann, ['events:read', 'webhooks:read'])
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/events?limit=1', headers: reader.auth })).statusCode, 200)
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers: reader.auth })).statusCode, 200)
    insufficient(await t.app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: reader.auth, payload: { url: 'https://hooks.example.com/x' } }), 'webhooks:write')

    // products:write is an administrator's: a user may not make a key with it, an administrator may and use it.
    assertError(await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: ann.auth, payload: { name: 'x', scopes: ['orders:read', 'products:write'] } }), 400, 'VALIDATION_ERROR', ['scopes.1'])
    const catalogue = await make(admin, ['products:write'])
    assert.equal((await t.app.inject({ method: 'POST', url: '/v1/products', headers: catalogue.auth, payload: { name: 'Desk', price: 5000, category: 'HOME', stock: 3 } })).statusCode, 201)
    insufficient(await t.app.inject({ method: 'GET', url: '/v1/orders', headers: catalogue.auth }), 'orders:read')
  })

  test('scope checks come with authentication: before validation and before 404', async (context) => {
    const { t, ann, make } = await world(context)
    const orders = await make(ann, ['orders:read'])
    insufficient(await t.app.inject({ method: 'POST', url: '/v1/orders', headers: orders.auth, payload: { productId: 'x' } }), 'orders:write')
    insufficient(await t.app.inject({ method: 'PATCH', url: '/v1/orders/999999', headers: orders.auth, payload: {} }), 'orders:write')
    insufficient(await t.app.inject({ method: 'DELETE', url: '/v1/posts/999999', headers: orders.auth }), 'posts:write')
  })

  test('keys never manage keys, the account or sessions: 403 INSUFFICIENT_SCOPE, whatever their scopes', async (context) => {
    const { t, ann, make } = await world(context)
    const all = await make(ann, ['posts:write', 'orders:read', 'orders:write', 'events:read', 'webhooks:read', 'webhooks:write'])
    for (const [method, url, payload] of [
      ['GET', '/v1/api-keys', undefined],
      ['POST', '/v1/api-keys', { name: 'more', scopes: ['orders:read'] }],
      ['GET', `/v1/api-keys/${all.id}`, undefined],
      ['DELETE', `/v1/api-keys/${all.id}`, undefined],
      ['GET', '/v1/sessions/current', undefined],
      ['DELETE', '/v1/sessions/current', undefined],
      ['PUT', `/v1/users/${ann.id}`, { email: ann.email, name: 'Ann' }],
      ['PUT', `/v1/users/${ann.id}/password`, { currentPassword: ann.password, newPassword: 'another password 1' }],
      ['DELETE', `/v1/users/${ann.id}`, undefined]
    ] as const) {
      insufficient(await t.app.inject({ method, url, headers: all.auth, ...(payload === undefined ? {} : { payload }) }), undefined)
    }
    // Nothing changed: the key and the session still work.
    assert.equal((await t.app.inject({ method: 'GET', url: `/v1/api-keys/${all.id}`, headers: ann.auth })).statusCode, 200)
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/orders', headers: all.auth })).statusCode, 200)
  })

  test('bad keys are 401 like a bad token: malformed, a wrong checksum, unknown, expired', async (context) => {
    const { t, ann, make } = await world(context)
    const made = await make(ann, ['orders:read'])
    const last = made.key.at(-1)!
    const wrongChecksum = made.key.slice(0, -1) + (last === 'A' ? 'B' : 'A')
    const changedBody = made.key.slice(0, 5) + (made.key[5] === 'A' ? 'B' : 'A') + made.key.slice(6)
    for (const key of ['rk_short_key_of_20_chars', wrongChecksum, changedBody, `${made.key}x`, 'rk_' + 'A'.repeat(38)]) {
      assertError(await t.app.inject({ method: 'GET', url: '/v1/orders', headers: { authorization: `Bearer ${key}` } }), 401, 'AUTHENTICATION_REQUIRED')
    }
    await write(t.app.db, async (trx) => { await trx.updateTable('api_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', BigInt(made.id)).execute() })
    assertError(await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth }), 401, 'AUTHENTICATION_REQUIRED')
    // An expired key is still listed (with its expiry) until revoked.
    assert.equal((await t.app.inject({ method: 'GET', url: `/v1/api-keys/${made.id}`, headers: ann.auth })).statusCode, 200)
  })

  test('bad input on create: each field named, never a 500', async (context) => {
    const { t, ann, make } = await world(context)
    const cases: Array<[unknown, string[]]> = [
      [{}, ['name', 'scopes']],
      [{ name: 'x' }, ['scopes']],
      [{ name: 'x', scopes: [] }, ['scopes']],
      [{ name: 'x', scopes: ['orders:delete'] }, ['scopes.0']],
      [{ name: 'x', scopes: ['orders:read', 'orders:read'] }, ['scopes']],
      [{ name: 'x', scopes: 'orders:read' }, ['scopes']],
      [{ name: 'x', scopes: [1] }, ['scopes.0']],
      [{ name: '', scopes: ['orders:read'] }, ['name']],
      [{ name: '   ', scopes: ['orders:read'] }, ['name']],
      [{ name: 'x'.repeat(101), scopes: ['orders:read'] }, ['name']],
      [{ name: 42, scopes: ['orders:read'] }, ['name']],
      [{ name: 'x', scopes: ['orders:read'], expiresAt: '2020-01-01T00:00:00Z' }, ['expiresAt']],
      [{ name: 'x', scopes: ['orders:read'], expiresAt: 'tomorrow' }, ['expiresAt']],
      [{ name: 'x', scopes: ['orders:read'], owner: 5 }, ['owner']],
      [{ name: 'x'.repeat(200), scopes: ['nope', 'orders:read'], expiresAt: '2001-01-01T00:00:00Z' }, ['name', 'scopes.0', 'expiresAt']]
    ]
    for (const [payload, fields] of cases) {
      assertError(await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: ann.auth, payload: payload as object }), 400, 'VALIDATION_ERROR', fields)
    }
    assertError(await t.app.inject({ method: 'POST', url: '/v1/api-keys', payload: { name: 'x', scopes: ['orders:read'] } }), 401, 'AUTHENTICATION_REQUIRED')
    // Read-only members are accepted and ignored.
    const made = await make(ann, ['orders:read'], { id: 1, prefix: 'rk_mine', lastUsedAt: null })
    assert.notEqual(made.prefix, 'rk_mine')
  })

  test(`at most ${MAX_LIVE_KEYS} live keys per account; expired ones do not count`, async (context) => {
    const { t } = await world(context)
    const carol = await createUser(t.app, { name: 'Carol' })
    const keys = await Promise.all(Array.from({ length: MAX_LIVE_KEYS + 3 }, async () => await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: carol.auth, payload: { name: 'k', scopes: ['orders:read'] } })))
    assert.deepEqual(keys.map((k) => k.statusCode).sort(), [...Array(MAX_LIVE_KEYS).fill(201), 409, 409, 409])
    for (const k of keys) if (k.statusCode === 409) assertError(k, 409, 'TOO_MANY_API_KEYS')
    const first = keys.find((k) => k.statusCode === 201)!.json().id as number
    await write(t.app.db, async (trx) => { await trx.updateTable('api_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', BigInt(first)).execute() })
    assert.equal((await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: carol.auth, payload: { name: 'k', scopes: ['orders:read'] } })).statusCode, 201)
  })

  test('lastUsedAt: the first use at once, later uses not written again within the minute', async (context) => {
    const { t, ann, make } = await world(context)
    const made = await make(ann, ['orders:read'])
    const lastUsedAt = async (): Promise<string | null> => (await t.app.inject({ method: 'GET', url: `/v1/api-keys/${made.id}`, headers: ann.auth })).json().lastUsedAt as string | null
    assert.equal(await lastUsedAt(), null)
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth })).statusCode, 200)
    // The use is written beside the request, not awaited by it: read until it shows.
    let first = await lastUsedAt()
    for (const started = Date.now(); first === null; first = await lastUsedAt()) {
      assert.ok(Date.now() - started < 10_000, 'the first use still not shown after 10 s')
      await delay(10)
    }
    assert.ok(Date.now() - Date.parse(first) < 5000, first)
    // Later uses, each past the millisecond of the first: one written would show a later time.
    while (Date.now() <= Date.parse(first)) await delay(1)
    for (let i = 0; i < 5; i++) assert.equal((await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth })).statusCode, 200)
    // A write those uses began would have committed by now.
    await writesSettled(t.app.db)
    assert.equal(await lastUsedAt(), first)
  })

  test('the owner\'s feed has api_key.created and api_key.revoked with the prefix, never the secret', async (context) => {
    const { t, admin, ann, make } = await world(context)
    const dave = await createUser(t.app, { name: 'Dave' })
    const made = await make(dave, ['orders:read'])
    await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${made.id}`, headers: dave.auth })
    const feed = (await t.app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: dave.auth })).json() as Array<{ type: string, resource: { type: string, id: number }, data: { prefix: string } }>
    const mine = feed.filter((e) => e.type.startsWith('api_key.'))
    assert.deepEqual(mine.map((e) => [e.type, e.resource.type, e.resource.id, e.data.prefix]), [['api_key.created', 'api_key', made.id, made.prefix], ['api_key.revoked', 'api_key', made.id, made.prefix]])
    assert.ok(!JSON.stringify(feed).includes(made.key))
    // Another user does not see them; an administrator does.
    assert.ok(((await t.app.inject({ method: 'GET', url: '/v1/events?type=api_key.created&limit=100', headers: ann.auth })).json() as Array<{ resource: { id: number } }>).every((e) => e.resource.id !== made.id))
    assert.ok(((await t.app.inject({ method: 'GET', url: '/v1/events?type=api_key.created&limit=100', headers: admin.auth })).json() as Array<{ resource: { id: number } }>).some((e) => e.resource.id === made.id))
  })

  test('a password change leaves the keys; deleting the account takes them', async (context) => {
    const { t, make } = await world(context)
    const erin = await createUser(t.app, { name: 'Erin', password: 'erin password 1' })
    const made = await make(erin, ['orders:read'])
    assert.equal((await t.app.inject({ method: 'PUT', url: `/v1/users/${erin.id}/password`, headers: erin.auth, payload: { currentPassword: 'erin password 1', newPassword: 'erin password 2' } })).statusCode, 204)
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth })).statusCode, 200)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/users/${erin.id}`, headers: erin.auth })).statusCode, 204)
    assertError(await t.app.inject({ method: 'GET', url: '/v1/orders', headers: made.auth }), 401, 'AUTHENTICATION_REQUIRED')
  })
  test('a key with events:read streams the feed, also through a stream ticket it made; revoking the key ends its streams at once', async (context) => {
    const { t, productId, make } = await world(context)
    const base = await t.url()
    const frank = await createUser(t.app, { name: 'Frank' })
    const made = await make(frank, ['events:read', 'orders:write'])
    const direct = await openStream(`${base}/v1/events?type=order.created`, made.auth)
    const ticketRes = await t.app.inject({ method: 'POST', url: '/v1/events/stream-tickets', headers: made.auth })
    assert.equal(ticketRes.statusCode, 201)
    const viaTicket = await openStream(`${base}/v1/events?type=order.created&ticket=${ticketRes.json().ticket as string}`)
    // A session's stream of the same user is not the key's: it stays.
    const session = await openStream(`${base}/v1/events?type=order.created`, frank.auth)
    try {
      assert.equal(direct.status, 200)
      assert.equal(viaTicket.status, 200)
      const order = await t.app.inject({ method: 'POST', url: '/v1/orders', headers: made.auth, payload: { productId, quantity: 1 } })
      assert.equal(order.statusCode, 201)
      for (const stream of [direct, viaTicket, session]) {
        assert.deepEqual((await stream.events(1)).map((m) => (JSON.parse(m.data!) as { resource: { id: number } }).resource.id), [order.json().id])
      }
      assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${made.id}`, headers: frank.auth })).statusCode, 204)
      assert.equal(await direct.ended(2000), 'end')
      assert.equal(await viaTicket.ended(2000), 'end')
      await assert.rejects(session.ended(300), /timed out/)
      // The ticket went with the key.
      const again = await openStream(`${base}/v1/events?ticket=${ticketRes.json().ticket as string}`)
      const againBody = await again.body()
      assertError({ statusCode: again.status, headers: again.headers, json: () => JSON.parse(againBody) }, 401, 'AUTHENTICATION_REQUIRED')
    } finally {
      direct.close()
      viaTicket.close()
      session.close()
    }
    // A key without events:read opens no stream and makes no ticket.
    const orders = await make(frank, ['orders:read'])
    const refused = await openStream(`${base}/v1/events`, orders.auth)
    const refusedBody = await refused.body()
    assertError({ statusCode: refused.status, headers: refused.headers, json: () => JSON.parse(refusedBody) }, 403, 'INSUFFICIENT_SCOPE')
    assert.equal(refused.headers['www-authenticate'], 'Bearer realm="api", error="insufficient_scope", scope="events:read"')
    assertError(await t.app.inject({ method: 'POST', url: '/v1/events/stream-tickets', headers: orders.auth }), 403, 'INSUFFICIENT_SCOPE')
  })
})
