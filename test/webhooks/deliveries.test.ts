import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { assertError, buildTestApp, createAdmin, createUser, type TestUser } from '../helper.js'
import { write } from '../../src/db/write.js'
import { recordEvent } from '../../src/events/event.repository.js'
import { createProduct, patchOrder, placeOrder } from '../products/fixtures.js'
import { startReceiver, type Receiver } from '../support/webhook-receiver.js'

// Deliveries end to end: a real receiver on loopback, the dispatcher of the app itself, the
// signature checked with the standardwebhooks package as a receiver would.

// An attempt's time limit well above what a loopback answer takes on a busy machine: a test that
// counts attempts must not see one more because an answer took half a second (the receiver
// that never answers takes the limit, once).
const { app, close } = await buildTestApp({
  WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.2,0.2',
  WEBHOOK_TIMEOUT_MS: '3000',
  WEBHOOK_POLL_MS: '50'
})
const receivers: Receiver[] = []
after(async () => {
  await close()
  for (const receiver of receivers) await receiver.close()
})
const admin = await createAdmin(app)

async function receiver (): Promise<Receiver> {
  const started = await startReceiver()
  receivers.push(started)
  return started
}

async function register (user: TestUser, body: Record<string, unknown>): Promise<{ id: number, secret: string }> {
  const res = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  assert.match(res.json().secret, /^whsec_/)
  assert.equal(res.headers.location, `/v1/webhook-endpoints/${res.json().id}`)
  return res.json()
}

async function deliveries (user: TestUser, endpointId: number): Promise<any[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, headers: user.auth })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

async function until<T> (what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > end) assert.fail(`${what}: still ${JSON.stringify(value)} after ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

function verify (secret: string, received: { headers: Record<string, unknown>, body: string }): any {
  return new Webhook(secret).verify(received.body, received.headers as Record<string, string>)
}

describe('deliveries', () => {
  test('an order placed and canceled reaches the owner\'s endpoint as two signed deliveries, in the feed\'s order', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    const endpoint = await register(user, { url: hook.url, events: ['order.created', 'order.canceled'] })
    const product = await createProduct(app, admin, { stock: 5 })
    const order = await placeOrder(app, user, product.id, 2)
    await hook.waitFor(1)
    assert.equal((await patchOrder(app, user, order.id, { status: 'CANCELED' })).statusCode, 200)
    const [created, canceled] = await hook.waitFor(2)
    const first = verify(endpoint.secret, created!)
    const second = verify(endpoint.secret, canceled!)
    assert.equal(first.type, 'order.created')
    assert.equal(second.type, 'order.canceled')
    assert.equal(first.data.id, order.id)
    assert.equal(second.data.status, 'CANCELED')
    assert.equal(created!.headers['webhook-id'], first.id)
    assert.equal(created!.headers['content-type'], 'application/json')
    // The same events, in the same order, in the feed.
    const feed = (await app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: user.auth })).json()
      .filter((e: any) => e.type.startsWith('order.'))
    assert.deepEqual(feed.map((e: any) => e.id), [first.id, second.id])
    assert.deepEqual(feed[0], first)
    assert.ok(second.resource.version > first.resource.version)
    const log = await until('two deliveries succeeded', async () => await deliveries(user, endpoint.id), (list) => list.length === 2 && list.every((d) => d.status === 'SUCCEEDED'))
    assert.deepEqual(log.map((d) => d.eventType), ['order.canceled', 'order.created'])
    assert.equal(log[0].attempts, 1)
    assert.equal(log[0].lastResponseStatus, 204)
    assert.equal(log[0].nextAttemptAt, null)
    assert.equal(typeof log[0].lastDurationMs, 'number')
  })

  test('a user\'s endpoint gets only what the user may read; an admin\'s gets everything', async () => {
    const alice = await createUser(app)
    const bob = await createUser(app)
    const aliceHook = await receiver()
    const adminHook = await receiver()
    await register(alice, { url: aliceHook.url, events: ['order.created'] })
    await register(admin, { url: adminHook.url, events: ['order.created'] })
    const product = await createProduct(app, admin, { stock: 5 })
    await placeOrder(app, bob, product.id, 1)
    const mine = await placeOrder(app, alice, product.id, 1)
    const [adminFirst, adminSecond] = await adminHook.waitFor(2)
    const [aliceOnly] = await aliceHook.waitFor(1)
    assert.equal(JSON.parse(aliceOnly!.body).data.id, mine.id)
    // Deliveries run side by side, so they may arrive in any order (the sequence tells).
    const byAdmin = [adminFirst, adminSecond].map((r) => JSON.parse(r!.body)).sort((a, b) => a.sequence - b.sequence)
    assert.deepEqual(byAdmin.map((e) => e.data.userId), [bob.id, alice.id])
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(aliceHook.received.length, 1)
  })

  test('an endpoint receives what occurs from its registration on: an event of before it, not fanned out yet, is not sent to it', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    const registered = Date.parse((await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: user.auth })).json().createdAt)
    // An event that occurred a second before the registration and is fanned out after it, as
    // when the registration commits before the round that follows the event's commit has run.
    await write(app.db, async (trx) => {
      await recordEvent(trx, { type: 'user.updated', resourceId: BigInt(user.id), audience: BigInt(user.id), data: { id: user.id, name: 'Before' }, actor: { userId: BigInt(user.id), apiKeyId: null } }, new Date(registered - 1000).toISOString())
    })
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'After' } })).statusCode, 200)
    const [received] = await hook.waitFor(1)
    assert.equal(JSON.parse(received!.body).data.name, 'After')
    // The older event has the lower number, so it was fanned out no later than the rename.
    const log = await until('the rename delivered', async () => await deliveries(user, endpoint.id), (list) => list.some((d) => d.status === 'SUCCEEDED'))
    assert.equal(log.length, 1)
    assert.equal(hook.received.length, 1)
  })

  test('a receiver failing twice, then answering: three attempts, retried on the schedule, succeeded', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    hook.answer = (_request, index) => index < 2 ? { status: 500 } : { status: 200 }
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    assert.equal((await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Renamed' } })).statusCode, 200)
    const attempts = await hook.waitFor(3)
    assert.equal(new Set(attempts.map((a) => a.headers['webhook-id'])).size, 1, 'the same message each time')
    assert.equal(new Set(attempts.map((a) => a.body)).size, 1, 'the same body each time')
    assert.ok(attempts[1]!.at - attempts[0]!.at >= 150, 'the second attempt waits for the schedule')
    const [delivery] = await until('succeeded', async () => await deliveries(user, endpoint.id), (list) => list[0]?.status === 'SUCCEEDED')
    assert.equal(delivery.attempts, 3)
    assert.equal(delivery.lastResponseStatus, 200)
    assert.equal(delivery.lastError, null)
  })

  test('attempts exhausted: FAILED with the last cause; a redirect is not followed', async () => {
    const user = await createUser(app)
    const target = await receiver()
    const hook = await receiver()
    hook.answer = () => ({ status: 302, headers: { location: target.url } })
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Again' } })
    const [delivery] = await until('failed', async () => await deliveries(user, endpoint.id), (list) => list[0]?.status === 'FAILED')
    assert.equal(delivery.attempts, 4)
    assert.equal(delivery.lastResponseStatus, 302)
    assert.equal(delivery.lastError, 'answered 302')
    assert.equal(target.received.length, 0)
  })

  test('a receiver that does not answer in time: the attempt times out and is retried', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    hook.answer = (_request, index) => index === 0 ? 'hang' : { status: 200 }
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Slow' } })
    await hook.waitFor(2)
    const [delivery] = await until('succeeded', async () => await deliveries(user, endpoint.id), (list) => list[0]?.status === 'SUCCEEDED')
    assert.equal(delivery.attempts, 2)
  })

  test('429 with Retry-After: the next attempt waits at least that long', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    hook.answer = (_request, index) => index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }
    await register(user, { url: hook.url, events: ['user.updated'] })
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Patient' } })
    const [first, second] = await hook.waitFor(2)
    assert.ok(second!.at - first!.at >= 950, `waited ${second!.at - first!.at} ms`)
  })

  test('410 Gone disables the endpoint, says why, and puts webhook_endpoint.disabled in the owner\'s feed', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    hook.answer = () => ({ status: 410 })
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Gone' } })
    const read = await until('disabled', async () => (await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: user.auth })).json(), (e) => e.enabled === false)
    assert.equal(read.disabledReason, 'The endpoint answered 410 Gone.')
    const [delivery] = await deliveries(user, endpoint.id)
    assert.equal(delivery.status, 'FAILED')
    assert.equal(delivery.attempts, 1)
    const feed = (await app.inject({ method: 'GET', url: '/v1/events?type=webhook_endpoint.disabled', headers: user.auth })).json()
    assert.equal(feed.length, 1)
    assert.equal(feed[0].data.id, endpoint.id)
    assert.equal(feed[0].data.enabled, false)
    // Enabled again by its owner: the reason is cleared.
    const enabled = await app.inject({ method: 'PATCH', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: user.auth, payload: { enabled: true } })
    assert.equal(enabled.statusCode, 200, enabled.body)
    assert.equal(enabled.json().disabledReason, null)
  })

  test('rotation: for a while both secrets sign; the new one and the old one each verify', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    const endpoint = await register(user, { url: hook.url, events: ['user.updated'] })
    const rotated = await app.inject({ method: 'POST', url: `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, headers: user.auth })
    assert.equal(rotated.statusCode, 200, rotated.body)
    const secret = rotated.json().secret
    assert.notEqual(secret, endpoint.secret)
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Rotated' } })
    const [received] = await hook.waitFor(1)
    assert.equal(String(received!.headers['webhook-signature']).split(' ').length, 2)
    assert.equal(verify(secret, received!).type, 'user.updated')
    assert.equal(verify(endpoint.secret, received!).type, 'user.updated')
    assert.throws(() => verify('whsec_' + Buffer.alloc(24, 7).toString('base64'), received!))
  })

  test('ping and redelivery: queued 202, delivered, in the log; a redelivery carries the same webhook-id and body', async () => {
    const user = await createUser(app)
    const hook = await receiver()
    const endpoint = await register(user, { url: hook.url, events: ['order.shipped'] })
    const ping = await app.inject({ method: 'POST', url: `/v1/webhook-endpoints/${endpoint.id}/ping`, headers: user.auth })
    assert.equal(ping.statusCode, 202, ping.body)
    assert.equal(ping.json().status, 'PENDING')
    assert.equal(ping.json().eventType, 'webhook.ping')
    const [pinged] = await hook.waitFor(1)
    const body = verify(endpoint.secret, pinged!)
    assert.deepEqual(body.resource, { type: 'webhook_endpoint', id: endpoint.id })
    await until('ping succeeded', async () => await deliveries(user, endpoint.id), (list) => list[0]?.status === 'SUCCEEDED')
    const again = await app.inject({ method: 'POST', url: `/v1/webhook-endpoints/${endpoint.id}/deliveries/${ping.json().id}/redeliver`, headers: user.auth })
    assert.equal(again.statusCode, 202, again.body)
    assert.notEqual(again.json().id, ping.json().id)
    const [, redelivered] = await hook.waitFor(2)
    assert.equal(redelivered!.headers['webhook-id'], pinged!.headers['webhook-id'])
    assert.equal(redelivered!.body, pinged!.body)
    const one = await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpoint.id}/deliveries/${again.json().id}`, headers: user.auth })
    assert.equal(one.statusCode, 200)
  })

  test('an endpoint failing past the limit is disabled', async () => {
    const { app: strict, close: closeStrict } = await buildTestApp({
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3', WEBHOOK_POLL_MS: '50', WEBHOOK_DISABLE_AFTER_SECONDS: '1'
    })
    try {
      const user = await createUser(strict)
      const hook = await receiver()
      hook.answer = () => ({ status: 500 })
      const created = await strict.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url: hook.url, events: ['user.updated'] } })
      await strict.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Failing' } })
      const read = await until('disabled', async () => (await strict.inject({ method: 'GET', url: `/v1/webhook-endpoints/${created.json().id}`, headers: user.auth })).json(), (e) => e.enabled === false)
      assert.match(read.disabledReason, /^Every delivery failed for/)
    } finally {
      await closeStrict()
    }
  })
})

describe('webhook endpoints: bad input and other people\'s', () => {
  test('URLs that could reach into the operator\'s network, or are not URLs: 400 on url', async () => {
    const user = await createUser(app)
    for (const url of ['http://example.com/hook', 'https://10.0.0.1/hook', 'https://169.254.169.254/latest', 'https://[::1]/x', 'https://192.168.1.1/x', 'https://[fe80::1]/x', 'not a url', 'https://user:pw@example.com/', 'ftp://example.com/']) {
      const res = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url } })
      assertError(res, 400, 'VALIDATION_ERROR', ['url'])
    }
  })

  test('a URL its text refuses is a field error with the others, before 404 and 412', async () => {
    const user = await createUser(app)
    const endpoint = await register(user, { url: 'http://127.0.0.1:9/x' })
    for (const url of ['https://10.0.0.1/x', 'https://user:pw@example.com/', 'ftp://example.com/', 'https://169.254.169.254/latest']) {
      assertError(await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url, colour: 'red' } }), 400, 'VALIDATION_ERROR', ['colour', 'url'])
      const patch = (id: string | number, headers: Record<string, string> = {}) =>
        app.inject({ method: 'PATCH', url: `/v1/webhook-endpoints/${id}`, headers: { ...user.auth, ...headers }, payload: { url } })
      assertError(await patch(endpoint.id, { 'if-match': '"stale"' }), 400, 'VALIDATION_ERROR', ['url'])
      assertError(await patch(999999999), 400, 'VALIDATION_ERROR', ['url'])
      assertError(await patch(0), 400, 'VALIDATION_ERROR', ['id', 'url'])
    }
    // A URL that failed its own rule is not judged again.
    assertError(await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: { url: 'https://10.0.0.1/' + 'a'.repeat(2100) } }), 400, 'VALIDATION_ERROR', ['url'])
  })

  test('missing, wrong-typed, too long, unknown members and event types: 400 naming each field', async () => {
    const user = await createUser(app)
    const post = async (payload: unknown) => await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: user.auth, payload: payload as object })
    assertError(await post({}), 400, 'VALIDATION_ERROR', ['url'])
    assertError(await post({ url: 42 }), 400, 'VALIDATION_ERROR', ['url'])
    assertError(await post({ url: 'https://example.com/' + 'a'.repeat(2100) }), 400, 'VALIDATION_ERROR', ['url'])
    assertError(await post({ url: 'http://127.0.0.1/x', events: [] }), 400, 'VALIDATION_ERROR', ['events'])
    assertError(await post({ url: 'http://127.0.0.1/x', events: ['order.exploded'] }), 400, 'VALIDATION_ERROR', ['events.0'])
    assertError(await post({ url: 'http://127.0.0.1/x', colour: 'red' }), 400, 'VALIDATION_ERROR', ['colour'])
    assertError(await post({ url: 'http://127.0.0.1/x', enabled: 'yes' }), 400, 'VALIDATION_ERROR', ['enabled'])
    assertError(await post({ url: 'http://127.0.0.1/x', description: 'x'.repeat(501) }), 400, 'VALIDATION_ERROR', ['description'])
    assertError(await app.inject({ method: 'PATCH', url: '/v1/webhook-endpoints/1', headers: user.auth, payload: {} }), 400, 'VALIDATION_ERROR', ['body'])
  })

  test('someone else\'s endpoint is 404 for every operation; an admin manages any; no token is 401', async () => {
    const owner = await createUser(app)
    const stranger = await createUser(app)
    const endpoint = await register(owner, { url: 'http://127.0.0.1:9/x' })
    const paths = [
      ['GET', `/v1/webhook-endpoints/${endpoint.id}`], ['PATCH', `/v1/webhook-endpoints/${endpoint.id}`], ['DELETE', `/v1/webhook-endpoints/${endpoint.id}`],
      ['POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`], ['POST', `/v1/webhook-endpoints/${endpoint.id}/ping`],
      ['GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`], ['GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries/1`],
      ['POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/1/redeliver`]
    ] as const
    for (const [method, url] of paths) {
      const payload = method === 'PATCH' ? { enabled: false } : undefined
      assertError(await app.inject({ method, url, headers: stranger.auth, ...(payload === undefined ? {} : { payload }) }), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND')
      assertError(await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) }), 401, 'AUTHENTICATION_REQUIRED')
    }
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers: stranger.auth })).json(), [])
    const listed = (await app.inject({ method: 'GET', url: '/v1/webhook-endpoints?limit=100', headers: admin.auth })).json()
    assert.ok(listed.some((e: any) => e.id === endpoint.id))
    assertError(await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpoint.id}/deliveries/999999`, headers: owner.auth }), 404, 'WEBHOOK_DELIVERY_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: '/v1/webhook-endpoints/999999999', headers: owner.auth }), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND')
    assertError(await app.inject({ method: 'GET', url: '/v1/webhook-endpoints/abc', headers: owner.auth }), 400, 'VALIDATION_ERROR', ['id'])
    const patched = await app.inject({ method: 'PATCH', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: admin.auth, payload: { description: 'checked by an admin' } })
    assert.equal(patched.statusCode, 200, patched.body)
    assert.equal(patched.json().secret, undefined, 'the secret is never shown again')
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: owner.auth })).statusCode, 204)
    assertError(await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${endpoint.id}`, headers: owner.auth }), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND')
  })
})
