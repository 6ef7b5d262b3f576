import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { setTimeout as delay } from 'node:timers/promises'
import { write } from '../../src/db/write.js'
import { STREAMS_PER_USER } from '../../src/events/event-stream.js'
import { assertError, buildAppForTest, buildTestApp, createAdmin, createUser, type TestApp, type TestUser } from '../helper.js'
import { openStream, type SseMessage } from '../support/sse-client.js'

// GET /v1/events with Accept: text/event-stream: the feed as a live stream, over real HTTP. Each
// test has an app of its own (world below), closed after it: none depends on what another did.

interface FeedEvent { id: string, sequence: number, type: string, resource: { id: number } }
const parsed = (messages: SseMessage[]): FeedEvent[] => messages.map((m) => JSON.parse(m.data!) as FeedEvent)

interface World {
  t: TestApp
  base: string
  admin: TestUser
  ann: TestUser
  bob: TestUser
  /** A post by `user`: its id. */
  post: (user: TestUser, title: string) => Promise<number>
  /** An order by `user` (of a product in stock): its id. */
  order: (user: TestUser) => Promise<number>
  /** The pull feed as `user` reads it, after `after`. */
  feed: (user: TestUser, after: number, query?: string) => Promise<FeedEvent[]>
  /** The sequence of the newest event. */
  newest: () => Promise<number>
}

/**
 * A new app for one test, listening on a loopback port, closed after it: an administrator, Ann,
 * Bob, and a product to order. The test's HTTP connections (undici's, the streams') are its own
 * too, and are cut before the app closes: the close would otherwise wait out the server's 10 s
 * header time limit on a kept-alive one.
 */
async function world (context: TestContext): Promise<World> {
  const t = await buildAppForTest(context, { SESSION_TTL_SECONDS: '3600' })
  const base = await t.url()
  const admin = await createAdmin(t.app)
  const ann = await createUser(t.app, { name: 'Ann' })
  const bob = await createUser(t.app, { name: 'Bob' })
  const product = await t.app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: { name: 'Lamp', price: 100, category: 'HOME', stock: 100000 } })
  const productId = product.json().id as number
  const post = async (user: TestUser, title: string): Promise<number> =>
    (await t.app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title, content: 'C' } })).json().id
  const order = async (user: TestUser): Promise<number> =>
    (await t.app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId, quantity: 1 } })).json().id
  const feed = async (user: TestUser, after: number, query = ''): Promise<FeedEvent[]> => {
    const events: FeedEvent[] = []
    for (;;) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/events?limit=100&after=${events.at(-1)?.sequence ?? after}${query}`, headers: user.auth })
      const page = res.json() as FeedEvent[]
      events.push(...page)
      if (page.length < 100) return events
    }
  }
  const newest = async (): Promise<number> => (await feed(admin, 0)).at(-1)?.sequence ?? 0
  return { t, base, admin, ann, bob, post, order, feed, newest }
}

/**
 * `work`, or a failure naming `what` once it has not settled within `ms`. A request through
 * app.inject that opens a stream by mistake never settles (inject waits for the whole answer);
 * this names the step instead of leaving the test to its time limit.
 */
async function within<T> (what: string, work: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what}: not done within ${ms} ms`)) }, ms) })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** The streams open on the app, as it counts them (the event_streams_open gauge). */
async function streamsOpen (t: TestApp): Promise<number> {
  const gauge = t.app.metricsRegistry.getSingleMetric('event_streams_open')
  assert.ok(gauge !== undefined, 'the event_streams_open gauge')
  return (await gauge.get()).values[0]?.value ?? 0
}

describe('GET /v1/events as a Server-Sent Events stream', () => {
  test('starts with retry:, then only what commits after it opened, each event as id, event and data; no-store, no compression', async (context) => {
    const { base, ann, post, feed } = await world(context)
    await post(ann, 'before the stream')
    const stream = await openStream(`${base}/v1/events`, { ...ann.auth, 'accept-encoding': 'gzip' })
    try {
      assert.equal(stream.status, 200)
      assert.match(String(stream.headers['content-type']), /^text\/event-stream/)
      assert.equal(stream.headers['cache-control'], 'no-store')
      assert.equal(stream.headers['content-encoding'], undefined)
      assert.ok(typeof stream.headers['x-request-id'] === 'string')
      const id = await post(ann, 'during the stream')
      const [first] = await stream.events(1)
      assert.deepEqual(stream.messages[0], { retry: '2000' })
      const event = JSON.parse(first!.data!) as FeedEvent
      assert.equal(event.type, 'post.created')
      assert.equal(event.resource.id, id)
      assert.equal(first!.event, 'post.created')
      assert.equal(first!.id, String(event.sequence))
      // The data is the feed's event, byte for byte.
      const [fromFeed] = await feed(ann, event.sequence - 1)
      assert.deepEqual(event, fromFeed)
    } finally {
      stream.close()
    }
  })

  test('backlog, then live, under concurrent writers: the sequence list equals the pull feed\'s, nothing twice', async (context) => {
    const { base, ann, bob, post, order, feed, newest } = await world(context)
    const start = await newest()
    for (let i = 0; i < 30; i++) await post(ann, `backlog ${i}`)
    const stream = await openStream(`${base}/v1/events?after=${start}`, ann.auth)
    try {
      // Writers keep going while the stream reads its backlog and switches to live.
      await Promise.all([
        ...Array.from({ length: 4 }, async (_, w) => { for (let i = 0; i < 15; i++) await post(w % 2 === 0 ? ann : bob, `live ${w}.${i}`) }),
        (async () => { for (let i = 0; i < 10; i++) await order(bob) })()
      ])
      // Then one more event, after all of them: whatever the stream sends of the others, twice
      // included, it sends before this last one, so the list is complete once that has come.
      const last = await post(ann, 'last')
      const expected = await feed(ann, start)
      assert.equal(expected.at(-1)?.resource.id, last)
      const seen = parsed(await stream.events(expected.length))
      assert.deepEqual(parsed(stream.messages.filter((m) => m.data !== undefined)).map((e) => e.sequence), expected.map((e) => e.sequence))
      assert.deepEqual(seen.slice(0, expected.length), expected)
      // Ann never sees Bob's orders; an administrator's stream would.
      assert.ok(seen.every((e) => e.type !== 'order.created'))
    } finally {
      stream.close()
    }
  })

  test('Last-Event-ID wins over after; a reconnection picks up exactly where the last one stopped', async (context) => {
    const { base, ann, bob, post, newest } = await world(context)
    const start = await newest()
    const first = await openStream(`${base}/v1/events?after=${start}`, ann.auth)
    const ids = [await post(ann, 'r1'), await post(ann, 'r2')]
    const got = await first.events(2)
    first.close()
    const last = got.at(-1)!.id!
    ids.push(await post(ann, 'r3'), await post(bob, 'r4'))
    // The browser reconnects with the URL it first used (after=start) and the last id it had.
    const again = await openStream(`${base}/v1/events?after=${start}`, { ...ann.auth, 'last-event-id': last })
    try {
      const resumed = parsed(await again.events(2))
      assert.deepEqual(resumed.map((e) => e.resource.id), ids.slice(2))
      assert.ok(resumed[0]!.sequence > Number(last))
    } finally {
      again.close()
    }
  })

  test('audience and type: a user streams their own and public events, an administrator every one; type filters', async (context) => {
    const { base, admin, ann, bob, order, newest } = await world(context)
    const start = await newest()
    const annStream = await openStream(`${base}/v1/events?after=${start}&type=order.created`, ann.auth)
    const adminStream = await openStream(`${base}/v1/events?after=${start}&type=order.created`, admin.auth)
    try {
      const bobs = await order(bob)
      const anns = await order(ann)
      const adminSees = parsed(await adminStream.events(2)).map((e) => e.resource.id)
      assert.deepEqual(adminSees, [bobs, anns])
      const annSees = parsed(await annStream.events(1)).map((e) => e.resource.id)
      assert.deepEqual(annSees, [anns])
      assert.ok(annStream.messages.every((m) => m.event === undefined || m.event === 'order.created'))
    } finally {
      annStream.close()
      adminStream.close()
    }
  })

  test('a log-out ends the stream of that session at once; a password change ends the other sessions\' streams; a deleted account and signing out everywhere end all', async (context) => {
    const { t, base, ann, post, feed, newest } = await world(context)
    const carol = await createUser(t.app, { name: 'Carol', password: 'carol password 1' })
    const second = (await t.app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: carol.email, password: carol.password } })).json().token as string
    const mine = await openStream(`${base}/v1/events`, carol.auth)
    const other = await openStream(`${base}/v1/events`, { authorization: `Bearer ${second}` })
    await t.app.inject({ method: 'PUT', url: `/v1/users/${carol.id}/password`, headers: carol.auth, payload: { currentPassword: carol.password, newPassword: 'carol password 2' } })
    assert.equal(await other.ended(2000), 'end')
    const third = await openStream(`${base}/v1/events`, carol.auth)
    assert.equal((await t.app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers: carol.auth })).statusCode, 204)
    assert.equal(await mine.ended(2000), 'end')
    assert.equal(await third.ended(2000), 'end')

    const dave = await createUser(t.app, { name: 'Dave' })
    const daves = await openStream(`${base}/v1/events`, dave.auth)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/users/${dave.id}`, headers: dave.auth })).statusCode, 204)
    assert.equal(await daves.ended(2000), 'end')

    // Signed out everywhere by an administrator: every stream of the user's sessions ends.
    const admin = await createAdmin(t.app)
    const erin = await createUser(t.app, { name: 'Erin' })
    const erinsOther = (await t.app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: erin.email, password: erin.password } })).json().token as string
    const erins = [await openStream(`${base}/v1/events`, erin.auth), await openStream(`${base}/v1/events`, { authorization: `Bearer ${erinsOther}` })]
    const start = await newest()
    const admins = await openStream(`${base}/v1/events?after=${start}`, admin.auth)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/users/${erin.id}/sessions`, headers: admin.auth })).statusCode, 204)
    for (const stream of erins) assert.equal(await stream.ended(2000), 'end')
    // The administrator's own stream stays: an event written after the sign-out still reaches it,
    // with everything the administrator's feed holds before it.
    const id = await post(ann, 'after Erin was signed out')
    const expected = await feed(admin, start)
    assert.equal(expected.at(-1)?.resource.id, id)
    assert.deepEqual(parsed(await admins.events(expected.length)).slice(0, expected.length), expected, 'the administrator\'s own stream stays')
    admins.close()
  })

  test(`at most ${STREAMS_PER_USER} streams per user: the next is 429 TOO_MANY_STREAMS with Retry-After, others unaffected`, async (context) => {
    const { t, base, ann } = await world(context)
    const erin = await createUser(t.app, { name: 'Erin' })
    // All at once, a few more than the cap: the cap holds however the openings interleave.
    const attempts = await Promise.all(Array.from({ length: STREAMS_PER_USER + 3 }, async () => await openStream(`${base}/v1/events`, erin.auth)))
    const open = attempts.filter((s) => s.status === 200)
    try {
      assert.deepEqual(attempts.map((s) => s.status).sort(), [...Array(STREAMS_PER_USER).fill(200), 429, 429, 429])
      for (const s of attempts) if (s.status === 429) await s.body()
      const refused = await openStream(`${base}/v1/events`, erin.auth)
      assert.equal(refused.status, 429)
      assert.ok(Number(refused.headers['retry-after']) > 0)
      const refusedBody = await refused.body()
      assertError({ statusCode: refused.status, headers: refused.headers, json: () => JSON.parse(refusedBody) }, 429, 'TOO_MANY_STREAMS')
      const others = await openStream(`${base}/v1/events`, ann.auth)
      assert.equal(others.status, 200)
      assert.equal(await streamsOpen(t), STREAMS_PER_USER + 1)
      others.close()
      open[0]!.close()
      // Once the server has seen both closed, Erin has a place again.
      for (const started = Date.now(); await streamsOpen(t) > STREAMS_PER_USER - 1; await delay(10)) {
        assert.ok(Date.now() - started < 10_000, `the two streams closed 10 s ago are still counted: ${await streamsOpen(t)} open`)
      }
      const again = await openStream(`${base}/v1/events`, erin.auth)
      assert.equal(again.status, 200)
      again.close()
    } finally {
      for (const s of open) s.close()
    }
  })

  test('refused before the stream opens, as JSON errors: no token 401, a bad Last-Event-ID or after 400, an expired position 410', async (context) => {
    const { t, base, ann } = await world(context)
    const noToken = await openStream(`${base}/v1/events`)
    assert.equal(noToken.status, 401)
    const noTokenBody = await noToken.body()
    assertError({ statusCode: 401, headers: noToken.headers, json: () => JSON.parse(noTokenBody) }, 401, 'AUTHENTICATION_REQUIRED')
    for (const [headers, query, fields] of [
      [{ 'last-event-id': 'abc' }, '', ['Last-Event-ID']],
      [{ 'last-event-id': '-1' }, '', ['Last-Event-ID']],
      [{ 'last-event-id': '12345678901234567890' }, '', ['Last-Event-ID']],
      [{}, '?after=x', ['after']],
      [{ 'last-event-id': '1.5' }, '?after=-2&limit=0', ['Last-Event-ID', 'after', 'limit']],
      [{}, '?since=3', ['since']]
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/events${query}`, headers: { ...ann.auth, accept: 'text/event-stream', ...headers } })
      assertError(res, 400, 'VALIDATION_ERROR', [...fields])
    }
    await write(t.app.db, async (trx) => { await trx.updateTable('event_log').set({ pruned_through: 2 }).where('id', '=', 1).execute() })
    try {
      assertError(await t.app.inject({ method: 'GET', url: '/v1/events', headers: { ...ann.auth, accept: 'text/event-stream', 'last-event-id': '1' } }), 410, 'EVENTS_EXPIRED')
    } finally {
      await write(t.app.db, async (trx) => { await trx.updateTable('event_log').set({ pruned_through: 0 }).where('id', '=', 1).execute() })
    }
  })

  test('Accept without text/event-stream (none, */*, application/json, a q=0 one) keeps the JSON feed', async (context) => {
    const { t, ann } = await world(context)
    for (const accept of [undefined, '*/*', 'application/json', 'text/event-stream;q=0, application/json']) {
      const res = await t.app.inject({ method: 'GET', url: '/v1/events?limit=1', headers: { ...ann.auth, ...(accept === undefined ? {} : { accept }) } })
      assert.equal(res.statusCode, 200, accept)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      assert.ok(Array.isArray(res.json()))
    }
  })

  test('a stream ticket: 201 once per request, opens the caller\'s streams without a header, nothing else; bad tickets 401', async (context) => {
    const { t, base, ann, bob, order, newest } = await within('the world', world(context), 60_000)
    const inject = async (what: string, options: InjectOptions): Promise<LightMyRequestResponse> => await within(what, t.app.inject(options))
    const made = await inject('a ticket', { method: 'POST', url: '/v1/events/stream-tickets', headers: ann.auth })
    assert.equal(made.statusCode, 201)
    assert.equal(made.headers['cache-control'], 'no-store')
    const { ticket, expiresAt } = made.json() as { ticket: string, expiresAt: string }
    assert.match(ticket, /^est_[A-Za-z0-9_-]{43}$/)
    const lifetime = new Date(expiresAt).getTime() - Date.now()
    assert.ok(lifetime > 290_000 && lifetime <= 300_000, `${lifetime} ms`)
    const start = await within('the newest event', newest())
    // Twice with the same URL (a browser reconnecting): both open, with Ann's audience.
    const first = await openStream(`${base}/v1/events?after=${start}&type=order.created&ticket=${ticket}`)
    const second = await openStream(`${base}/v1/events?after=${start}&type=order.created&ticket=${ticket}`)
    try {
      assert.equal(first.status, 200)
      assert.equal(second.status, 200)
      const bobs = await within('Bob\'s order', order(bob))
      const anns = await within('Ann\'s order', order(ann))
      // Only Ann's order: Bob's, committed first, is not hers to see.
      assert.deepEqual(parsed(await first.events(1)).map((e) => e.resource.id), [anns])
      assert.deepEqual(parsed(await second.events(1)).map((e) => e.resource.id), [anns])
      assert.ok(bobs < anns)
    } finally {
      first.close()
      second.close()
    }
    // Not a credential anywhere else: the JSON feed, another route.
    assertError(await inject('the feed by ticket', { method: 'GET', url: `/v1/events?ticket=${ticket}` }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await inject('the feed by token and ticket', { method: 'GET', url: `/v1/events?ticket=${ticket}`, headers: ann.auth }), 400, 'VALIDATION_ERROR', ['ticket'])
    assertError(await inject('orders by ticket', { method: 'GET', url: '/v1/orders', headers: { authorization: `Bearer ${ticket}` } }), 401, 'AUTHENTICATION_REQUIRED')
    // A near miss changes the last character to another (were it replaced by the one it already
    // is, the ticket would be good, and its stream would open and never end).
    const nearMiss = `${ticket.slice(0, -1)}${ticket.endsWith('A') ? 'B' : 'A'}`
    for (const bad of ['est_nope', nearMiss, ticket.replace('est_', 'tkt_'), '']) {
      const res = await inject(`a stream with the ticket "${bad}"`, { method: 'GET', url: `/v1/events?ticket=${encodeURIComponent(bad)}`, headers: { accept: 'text/event-stream' } })
      assertError(res, 401, 'AUTHENTICATION_REQUIRED')
    }
    // No token, no ticket.
    assertError(await inject('a ticket without a token', { method: 'POST', url: '/v1/events/stream-tickets' }), 401, 'AUTHENTICATION_REQUIRED')
    // An expired ticket opens nothing; a ticket of a session logged out opens nothing.
    await within('the ticket expired', write(t.app.db, async (trx) => { await trx.updateTable('stream_tickets').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute() }))
    assertError(await inject('a stream with the expired ticket', { method: 'GET', url: `/v1/events?ticket=${ticket}`, headers: { accept: 'text/event-stream' } }), 401, 'AUTHENTICATION_REQUIRED')
    const frank = await within('Frank', createUser(t.app, { name: 'Frank' }))
    const franks = (await inject('Frank\'s ticket', { method: 'POST', url: '/v1/events/stream-tickets', headers: frank.auth })).json().ticket as string
    await inject('Frank\'s log-out', { method: 'DELETE', url: '/v1/sessions/current', headers: frank.auth })
    assertError(await inject('a stream with the ticket of a session logged out', { method: 'GET', url: `/v1/events?ticket=${franks}`, headers: { accept: 'text/event-stream' } }), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('a stream ends when its session expires', async () => {
    const shortLived = await buildTestApp({ SESSION_TTL_SECONDS: '2' })
    try {
      const user = await createUser(shortLived.app)
      const stream = await openStream(`${await shortLived.url()}/v1/events`, user.auth)
      assert.equal(stream.status, 200)
      const started = Date.now()
      assert.equal(await stream.ended(5000), 'end')
      assert.ok(Date.now() - started < 3500, `ended after ${Date.now() - started} ms`)
    } finally {
      await shortLived.close()
    }
  })
})
