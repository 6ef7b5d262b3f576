import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { createApiClient } from '../../client/index.js'
import { buildTestApp, createAdmin, uniqueEmail } from '../helper.js'

// The typed client (client/, generated from the OpenAPI document) against the app over real
// HTTP: every operation of the document, called through its generated types. A change to the
// document that breaks a call here breaks the typecheck or this test.

// Webhook endpoints on loopback are allowed (one is registered below; nothing is delivered to it).
const { app, url, close } = await buildTestApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' })
after(close)
const base = await url()
const anonymous = createApiClient(base)
const admin = await createAdmin(app)
const asAdmin = createApiClient(base, { token: admin.token })

describe('the typed client, over real HTTP', () => {
  test('service: index, health, the error catalogue', async () => {
    const index = await anonymous.GET('/')
    assert.equal(index.data?.apiBase, '/v1')
    assert.equal((await anonymous.GET('/health/live')).data?.status, 'ok')
    assert.equal((await anonymous.GET('/health/ready')).data?.status, 'ok')
    const errors = await anonymous.GET('/errors')
    assert.ok(errors.data?.some((entry) => entry.code === 'TOO_MANY_REQUESTS' && entry.retryable))
    const entry = await anonymous.GET('/errors/{code}', { params: { path: { code: 'POST_NOT_FOUND' } } })
    assert.equal(entry.data?.status, 404)
    const unknown = await anonymous.GET('/errors/{code}', { params: { path: { code: 'NOPE' } } })
    assert.equal(unknown.error?.code, 'NOT_FOUND')
  })

  test('users, sessions and password: the account life', async () => {
    const email = uniqueEmail('client')
    const created = await anonymous.POST('/v1/users', { body: { email, password: 'client password 1', name: 'Client' } })
    assert.equal(created.response.status, 201)
    const id = String(created.data!.id)
    assert.equal(created.response.headers.get('location'), `/v1/users/${id}`)

    const login = await anonymous.POST('/v1/sessions', { body: { email, password: 'client password 1' } })
    assert.equal(login.data?.tokenType, 'Bearer')
    const me = createApiClient(base, { token: login.data!.token })

    const current = await me.GET('/v1/sessions/current')
    assert.equal(current.data?.user.email, email)
    assert.equal((current.data as Record<string, unknown>).token, undefined)

    const read = await anonymous.GET('/v1/users/{id}', { params: { path: { id } } })
    assert.deepEqual(read.data, { id: created.data!.id, name: 'Client' })
    const profile = await anonymous.GET('/v1/users/{id}/profile', { params: { path: { id } } })
    assert.equal(profile.data?.postCount, 0)

    const renamed = await me.PUT('/v1/users/{id}', { params: { path: { id } }, body: { email, name: 'Renamed' } })
    assert.equal(renamed.data?.name, 'Renamed')

    const orders = await me.GET('/v1/users/{id}/orders', { params: { path: { id }, query: { limit: 5 } } })
    assert.deepEqual(orders.data, [])

    const changed = await me.PUT('/v1/users/{id}/password', { params: { path: { id } }, body: { currentPassword: 'client password 1', newPassword: 'client password 2' } })
    assert.equal(changed.response.status, 204)

    const loggedOut = await me.DELETE('/v1/sessions/current')
    assert.equal(loggedOut.response.status, 204)
    assert.equal((await me.GET('/v1/sessions/current')).error?.code, 'AUTHENTICATION_REQUIRED')

    const again = await anonymous.POST('/v1/sessions', { body: { email, password: 'client password 2' } })
    const back = createApiClient(base, { token: again.data!.token })
    const deleted = await back.DELETE('/v1/users/{id}', { params: { path: { id } } })
    assert.equal(deleted.response.status, 204)
    assert.equal((await anonymous.GET('/v1/users/{id}', { params: { path: { id } } })).error?.code, 'USER_NOT_FOUND')
  })

  test('posts: create, list, read, replace, change, count a view, delete', async () => {
    const email = uniqueEmail('writer')
    await anonymous.POST('/v1/users', { body: { email, password: 'writer password', name: 'Writer' } })
    const login = await anonymous.POST('/v1/sessions', { body: { email, password: 'writer password' } })
    const writer = createApiClient(base, { token: login.data!.token })

    const created = await writer.POST('/v1/posts', { body: { title: 'Typed', content: 'From the client.' } })
    assert.equal(created.response.status, 201)
    const id = String(created.data!.id)
    const list = await anonymous.GET('/v1/posts', { params: { query: { authorId: String(created.data!.author.id), limit: 10 } } })
    assert.deepEqual(list.data?.map((post) => post.id), [created.data!.id])
    const read = await anonymous.GET('/v1/posts/{id}', { params: { path: { id } } })
    assert.equal(read.data?.title, 'Typed')
    const etag = read.response.headers.get('etag') ?? undefined
    const replaced = await writer.PUT('/v1/posts/{id}', { params: { path: { id }, header: { 'if-match': etag } }, body: { title: 'Typed again', content: 'Replaced.' } })
    assert.equal(replaced.data?.title, 'Typed again')
    const patched = await writer.PATCH('/v1/posts/{id}', { params: { path: { id } }, body: { content: 'Changed.' } })
    assert.equal(patched.data?.content, 'Changed.')
    const views = await anonymous.POST('/v1/posts/{id}/views', { params: { path: { id } } })
    assert.equal(views.data?.views, 1)
    const deleted = await writer.DELETE('/v1/posts/{id}', { params: { path: { id } } })
    assert.equal(deleted.response.status, 204)
  })

  test('shop: products and orders', async () => {
    const product = await asAdmin.POST('/v1/products', { body: { name: 'Typed notebook', price: 250, category: 'BOOK', stock: 5 } })
    assert.equal(product.response.status, 201)
    const productId = String(product.data!.id)
    const listed = await anonymous.GET('/v1/products', { params: { query: { limit: 1 } } })
    assert.equal(listed.data?.length, 1)
    assert.equal((await anonymous.GET('/v1/products/{id}', { params: { path: { id: productId } } })).data?.stock, 5)
    const cheaper = await asAdmin.PATCH('/v1/products/{id}', { params: { path: { id: productId } }, body: { price: 200 } })
    assert.equal(cheaper.data?.price, 200)

    const order = await asAdmin.POST('/v1/orders', {
      params: { header: { 'idempotency-key': 'client-test-1' } },
      body: { productId: product.data!.id, quantity: 2 }
    })
    assert.equal(order.response.status, 201)
    assert.equal(order.data?.totalPrice, 400)
    const replay = await asAdmin.POST('/v1/orders', { params: { header: { 'idempotency-key': 'client-test-1' } }, body: { productId: product.data!.id, quantity: 2 } })
    assert.equal(replay.response.headers.get('idempotent-replayed'), 'true')
    const orderId = String(order.data!.id)
    assert.equal((await asAdmin.GET('/v1/orders/{id}', { params: { path: { id: orderId } } })).data?.status, 'PAID')
    const shipped = await asAdmin.PATCH('/v1/orders/{id}', { params: { path: { id: orderId } }, body: { status: 'SHIPPED' } })
    assert.equal(shipped.data?.status, 'SHIPPED')
  })

  test('events and webhook endpoints', async () => {
    const feed = await asAdmin.GET('/v1/events', { params: { query: { limit: 100, type: 'order.shipped' } } })
    assert.equal(feed.response.status, 200)
    const shipped = feed.data!.at(-1)!
    // The union narrows on `type`: an order event's data is an Order.
    if (shipped.type !== 'order.shipped') assert.fail(shipped.type)
    assert.equal(shipped.data.status, 'SHIPPED')
    assert.equal(shipped.resource.type, 'order')

    const endpoint = await asAdmin.POST('/v1/webhook-endpoints', { body: { url: 'http://127.0.0.1:9/typed', events: ['order.created'], enabled: false } })
    assert.equal(endpoint.response.status, 201)
    assert.match(endpoint.data!.secret, /^whsec_/)
    const id = String(endpoint.data!.id)
    const listed = await asAdmin.GET('/v1/webhook-endpoints', { params: { query: { limit: 10 } } })
    assert.ok(listed.data?.some((e) => String(e.id) === id))
    const described = await asAdmin.PATCH('/v1/webhook-endpoints/{id}', { params: { path: { id } }, body: { description: 'typed' } })
    assert.equal(described.data?.description, 'typed')
    const ping = await asAdmin.POST('/v1/webhook-endpoints/{id}/ping', { params: { path: { id } } })
    assert.equal(ping.data?.eventType, 'webhook.ping')
    const log = await asAdmin.GET('/v1/webhook-endpoints/{id}/deliveries', { params: { path: { id } } })
    assert.equal(log.data?.[0]?.status, 'PENDING')
    const rotated = await asAdmin.POST('/v1/webhook-endpoints/{id}/rotate-secret', { params: { path: { id } } })
    assert.notEqual(rotated.data?.secret, endpoint.data!.secret)
    assert.equal((await asAdmin.DELETE('/v1/webhook-endpoints/{id}', { params: { path: { id } } })).response.status, 204)
  })
  test('API keys: made with a log-in token, used as the credential, refused beyond their scopes, revoked', async () => {
    const made = await asAdmin.POST('/v1/api-keys', { body: { name: 'typed', scopes: ['orders:read'] } })
    assert.equal(made.response.status, 201)
    const id = String(made.data!.id)
    const asKey = createApiClient(base, { token: made.data!.key })
    assert.equal((await asKey.GET('/v1/orders', { params: { query: { limit: 1 } } })).response.status, 200)
    const refused = await asKey.POST('/v1/orders', { body: { productId: 1, quantity: 1 } })
    assert.equal(refused.error?.code, 'INSUFFICIENT_SCOPE')
    assert.equal(refused.response.headers.get('www-authenticate'), 'Bearer realm="api", error="insufficient_scope", scope="orders:write"')
    assert.equal((await asAdmin.GET('/v1/api-keys/{id}', { params: { path: { id } } })).data?.prefix, made.data!.prefix)
    assert.ok((await asAdmin.GET('/v1/api-keys')).data?.some((k) => String(k.id) === id))
    assert.equal((await asAdmin.DELETE('/v1/api-keys/{id}', { params: { path: { id } } })).response.status, 204)
    assert.equal((await asKey.GET('/v1/orders')).error?.code, 'AUTHENTICATION_REQUIRED')
  })
})
