import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { Agent, request } from 'undici'
import { write } from '../../src/db/write.js'
import { listQuery } from '../../src/pipeline/fast-reads.js'
import type { RequestMetrics } from '../../src/service/request-metrics.js'
import { assertError, buildTestApp, createAdmin, createUser, type TestApp } from '../helper.js'

// An anonymous GET of a post or a product by id, and of a page of the posts or the products asked
// for with `limit` and `cursor` only, is answered before Fastify's request path
// (pipeline/fast-reads.ts). Over real HTTP, each such answer must be the one Fastify's path gives
// the same request (app.inject goes through Fastify's path only): the same status, body and
// headers (the date, the connection's and the rate limit's count apart), the same access line,
// the same metrics. Any request the fast path does not take must reach Fastify's path untouched.

const lines: string[] = []
const logStream = { write: (text: string) => { lines.push(...text.split('\n').filter((l) => l !== '')) } }
const agent = new Agent()
const main = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '100000' }, { logger: { level: 'info', stream: logStream } })
after(async () => { await agent.close(); await main.close() })
const { app } = main
const base = await main.url()

const user = await createUser(app, { name: 'Zoë "Quotes" \\ Ωmega' })
const createdPost = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title: 'Fast «read» "quoted" \\ \u2028', content: 'Body with\nlines and emoji 🙂' } })
assert.equal(createdPost.statusCode, 201, createdPost.body)
const postId = createdPost.json().id as number
const admin = await createAdmin(app)
const createdProduct = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: { name: 'A lamp', price: 1999, category: 'HOME', stock: 3 } })
assert.equal(createdProduct.statusCode, 201, createdProduct.body)
const productId = createdProduct.json().id as number
// Pages of more than one item, and a next page, for the lists.
for (const title of ['Second', 'Third']) {
  assert.equal((await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title, content: `The ${title.toLowerCase()} post.` } })).statusCode, 201)
}
assert.equal((await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: { name: 'A chair', price: 4999, category: 'HOME', stock: 0, onSale: false } })).statusCode, 201)
const secondPage = /^<([^>]+)>/.exec(String((await app.inject({ method: 'GET', url: '/v1/posts?limit=1' })).headers.link))![1]!

interface WireAnswer { statusCode: number, headers: Record<string, string | string[] | undefined>, body: string }

async function overWire (t: TestApp | undefined, path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<WireAnswer> {
  const res = await request(`${t === undefined ? base : await t.url()}${path}`, { method, headers, dispatcher: agent })
  return { statusCode: res.statusCode, headers: res.headers, body: await res.body.text() }
}

// Headers that differ between two answers to the same request for reasons of their own: the
// date, the connection's own (inject has none), and the rate limit's count (compared apart).
const OWN = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'ratelimit'])
const comparable = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !OWN.has(name)).map(([name, value]) => [name, String(value)]))
const remaining = (headers: Record<string, unknown>): number => Number(/;r=(\d+);/.exec(String(headers.ratelimit))?.[1])

let sequence = 0
/** The same request through Fastify's path (inject) and then over the wire: both answers, and whether the fast path answered the second. */
async function both (path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<{ viaFastify: LightMyRequestResponse, wire: WireAnswer, fast: boolean, id: string }> {
  const id = `fast-read-${++sequence}`
  const viaFastify = await app.inject({ method, url: path, headers: { ...headers, 'x-request-id': id } })
  const before = app.fastReads.answered
  const wire = await overWire(undefined, path, { ...headers, 'x-request-id': id }, method)
  return { viaFastify, wire, fast: app.fastReads.answered === before + 1, id }
}

/** Each request reaches Fastify's path (not the fast one) and gets the answer inject gets. */
async function assertHandedOver (cases: Array<[string, string, Record<string, string>?, ('GET' | 'HEAD')?]>): Promise<void> {
  for (const [what, path, headers, method] of cases) {
    const { viaFastify, wire, fast } = await both(path, headers, method)
    assert.equal(fast, false, `${what}: not on the fast path`)
    assert.equal(wire.statusCode, viaFastify.statusCode, what)
    assert.equal(wire.body, viaFastify.body, what)
    assert.deepEqual(comparable(wire.headers), comparable(viaFastify.headers), what)
  }
}

function assertSameAnswer (viaFastify: LightMyRequestResponse, wire: WireAnswer): void {
  assert.equal(wire.statusCode, viaFastify.statusCode)
  assert.equal(wire.body, viaFastify.body)
  assert.deepEqual(comparable(wire.headers), comparable(viaFastify.headers))
  // One request more in the same client's window.
  assert.equal(remaining(wire.headers), remaining(viaFastify.headers) - 1)
}

describe('fast reads', () => {
  test('a post and a product by id: the answer Fastify\'s path gives, byte for byte, header for header', async () => {
    for (const path of [`/v1/posts/${postId}`, `/v1/products/${productId}`]) {
      const { viaFastify, wire, fast } = await both(path)
      assert.equal(fast, true, `${path} was answered on the fast path`)
      assert.equal(wire.statusCode, 200)
      assertSameAnswer(viaFastify, wire)
      assert.match(String(wire.headers.etag), /^"[\w-]{27}"$/)
      assert.equal(wire.headers['x-content-type-options'], 'nosniff')
      assert.equal(wire.headers['cache-control'], undefined)
    }
  })

  test('If-None-Match: 304 for a current tag (weakly compared, in a list, or *), 200 for a stale one, as on Fastify\'s path', async () => {
    for (const path of [`/v1/posts/${postId}`, `/v1/products/${productId}`]) {
      const etag = String((await overWire(undefined, path)).headers.etag)
      const answers: Array<[string, number]> = [[etag, 304], [`W/${etag}`, 304], [`"other", ${etag}`, 304], ['*', 304], ['"stale"', 200], [`${etag.slice(0, -2)}"`, 200]]
      for (const [header, status] of answers) {
        const { viaFastify, wire, fast } = await both(path, { 'if-none-match': header })
        assert.equal(fast, true, `${header}: on the fast path`)
        assert.equal(wire.statusCode, status, header)
        assertSameAnswer(viaFastify, wire)
      }
    }
  })

  for (const [path, route] of [[`/v1/posts/${postId}`, '/v1/posts/:id'], ['/v1/posts?limit=2', '/v1/posts'], [secondPage, '/v1/posts']] as const) {
    test(`the same access line and the same metrics as on Fastify's path: ${route}${path.includes('cursor=') ? ', a next page' : ''}`, async () => {
      const metrics = app.accessLog.metrics as RequestMetrics
      const series = `http_requests_total{method="GET",route="${route}",status_code="200"}`
      const counted = (): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics.exposition())?.[1] ?? 0)
      const before = counted()
      const { fast, id } = await both(path)
      assert.equal(fast, true)
      assert.equal(counted(), before + 2)
      app.accessLog.flush()
      const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.reqId === id)
      assert.equal(logged.length, 2, 'one line per answer')
      const [viaFastify, wire] = logged.map(({ time, responseTime, ...rest }) => {
        assert.equal(typeof time, 'number')
        assert.equal(typeof responseTime, 'number')
        return rest
      })
      assert.deepEqual(wire, viaFastify)
      assert.deepEqual(Object.keys(wire!), ['level', 'pid', 'hostname', 'reqId', 'method', 'url', 'route', 'statusCode', 'remoteAddress', 'msg'])
    })
  }

  test('a page of the posts or the products: the answer Fastify\'s path gives, the next page\'s Link included', async () => {
    for (const list of ['/v1/posts', '/v1/products']) {
      const first = await both(`${list}?limit=1`)
      assert.equal(first.fast, true, `${list}?limit=1 was answered on the fast path`)
      assertSameAnswer(first.viaFastify, first.wire)
      assert.equal(JSON.parse(first.wire.body).length, 1)
      const next = /^<([^>]+)>; rel="next"$/.exec(String(first.wire.headers.link))?.[1] ?? ''
      assert.ok(next.startsWith(`${list}?limit=1&cursor=`), `a next page: ${String(first.wire.headers.link)}`)
      const cursor = next.slice(next.indexOf('cursor='))
      for (const path of [next, `${list}?${cursor}&limit=1`, `${list}?${cursor}`, list, `${list}?limit=100`, `${list}?limit=2`]) {
        const { viaFastify, wire, fast } = await both(path)
        assert.equal(fast, true, `${path} was answered on the fast path`)
        assert.equal(wire.statusCode, 200, path)
        assertSameAnswer(viaFastify, wire)
        assert.equal(wire.headers.etag, undefined)
        assert.equal(wire.headers['x-content-type-options'], 'nosniff')
      }
      // A list has no ETag: If-None-Match changes nothing, on either path.
      const conditional = await both(`${list}?limit=1`, { 'if-none-match': '*' })
      assert.equal(conditional.fast, true)
      assert.equal(conditional.wire.statusCode, 200)
      assertSameAnswer(conditional.viaFastify, conditional.wire)
      // The last page: no Link.
      const all = await both(`${list}?limit=100`)
      assert.equal(all.wire.headers.link, undefined)
      assert.ok(JSON.parse(all.wire.body).length >= 2)
    }
  })

  test('a list\'s requests the fast path does not take reach Fastify\'s path and get its answer', async () => {
    const cursorOf = async (path: string): Promise<string> => {
      const next = /<([^>]+)>/.exec(String((await overWire(undefined, path)).headers.link))![1]!
      return next.slice(next.indexOf('cursor=') + 'cursor='.length)
    }
    const postsCursor = await cursorOf('/v1/posts?limit=1')
    // Cursors of the same lists in another order: the plain list refuses them (CURSOR_MISMATCH).
    const byViews = await cursorOf('/v1/posts?sort=-views&limit=1')
    const byPrice = await cursorOf('/v1/products?sort=price&limit=1')
    const cases: Array<[string, string, Record<string, string>?, ('GET' | 'HEAD')?]> = [
      ['limit 0', '/v1/posts?limit=0'],
      ['limit 101', '/v1/posts?limit=101'],
      ['a leading zero', '/v1/posts?limit=020'],
      ['limit twice', '/v1/posts?limit=2&limit=3'],
      ['cursor twice', `/v1/posts?cursor=${postsCursor}&cursor=${postsCursor}`],
      ['a cursor not of this service', '/v1/posts?cursor=bad'],
      ['a cursor of another order', `/v1/posts?cursor=${byViews}`],
      ['a cursor of another order (products)', `/v1/products?limit=1&cursor=${byPrice}`],
      ['a cursor of another sort', `/v1/posts?sort=-views&cursor=${postsCursor}`],
      ['a sort', '/v1/posts?sort=-views'],
      ['a filter', `/v1/posts?authorId=${user.id}`],
      ['a filter of products', '/v1/products?category=HOME'],
      ['a search', '/v1/posts?q=second'],
      ['an unknown parameter', '/v1/posts?expand=author'],
      ['a trailing &', '/v1/posts?limit=2&'],
      ['a name in capitals', '/v1/posts?LIMIT=2'],
      ['a percent-encoded digit', '/v1/posts?limit=2%30'],
      ['a trailing slash', '/v1/posts/'],
      ['a credential', '/v1/posts?limit=2', { authorization: 'Bearer not-a-token' }],
      ['a session of a user', '/v1/posts', user.auth],
      ['a cookie', '/v1/posts', { cookie: 'a=b' }],
      ['an Origin', '/v1/posts', { origin: 'https://elsewhere.example' }],
      ['HEAD', '/v1/posts', {}, 'HEAD']
    ]
    await assertHandedOver(cases)
    // What a client cannot send through undici (it drops an empty query), read as the server would.
    for (const url of ['/v1/posts?', '/v1/posts?&', '/v1/posts?limit=2&&', '/v1/posts?limit=2&cursor=a&limit=3']) assert.equal(listQuery(url, '/v1/posts'), undefined, url)
    assert.deepEqual(listQuery('/v1/posts?cursor=a_-B&limit=100', '/v1/posts'), { cursor: 'a_-B', limit: 100 })
    const mismatch = await overWire(undefined, `/v1/posts?cursor=${byViews}`, { 'x-request-id': 'cursor-mismatch' })
    assertError({ ...mismatch, json: () => JSON.parse(mismatch.body) }, 400, 'CURSOR_MISMATCH')
    const bad = await overWire(undefined, '/v1/posts?cursor=bad', { 'x-request-id': 'bad-cursor' })
    assertError({ ...bad, json: () => JSON.parse(bad.body) }, 400, 'VALIDATION_ERROR', ['cursor'])
    const twice = await overWire(undefined, '/v1/posts?limit=2&limit=3', { 'x-request-id': 'limit-twice' })
    assertError({ ...twice, json: () => JSON.parse(twice.body) }, 400, 'VALIDATION_ERROR', ['limit'])
  })

  test('a post or a page holding a view count past 2^53 − 1: Fastify\'s path writes it, every digit', async () => {
    const setViews = async (views: bigint) => {
      await write(app.db, async (trx) => { await trx.updateTable('posts').set({ views }).where('id', '=', BigInt(postId)).execute() })
    }
    await setViews(9007199254740993n)
    try {
      for (const path of [`/v1/posts/${postId}`, '/v1/posts?limit=100']) {
        const { viaFastify, wire, fast } = await both(path)
        assert.equal(fast, false, `${path}: not on the fast path`)
        assertSameAnswer(viaFastify, wire)
        assert.match(wire.body, new RegExp(`"id":${postId},[^]*?"views":9007199254740993,`), path)
      }
    } finally {
      await setViews(0n)
    }
    for (const path of [`/v1/posts/${postId}`, '/v1/posts?limit=100']) assert.equal((await both(path)).fast, true, `${path}: back on the fast path`)
  })

  test('any query of the two lists: the same status, body and Link over the wire as through Fastify\'s path', { timeout: 60_000 }, async () => {
    const query = fc.oneof(
      fc.constantFrom('', '?limit=1', '?limit=100', '?cursor=', '?limit=1&cursor='),
      fc.stringMatching(/^\?(limit|cursor|sort|q)=[0-9a-z_-]{0,8}(&(limit|cursor)=[0-9A-Za-z_-]{0,8})?$/),
      fc.stringMatching(/^[0-9a-z%./?=&_-]{0,14}$/)
    )
    await fc.assert(fc.asyncProperty(fc.constantFrom('/v1/posts', '/v1/products'), query, async (list, rest) => {
      const { viaFastify, wire } = await both(`${list}${rest}`)
      assert.equal(wire.statusCode, viaFastify.statusCode)
      assert.equal(wire.body, viaFastify.body)
      assert.equal(wire.headers.link, viaFastify.headers.link)
    }), { numRuns: 150 })
  })

  test('requests the fast path does not take reach Fastify\'s path and get its answer', async () => {
    const cases: Array<[string, string, Record<string, string>?, ('GET' | 'HEAD')?]> = [
      ['an unknown post', '/v1/posts/987654321'],
      ['an unknown product', '/v1/products/987654321'],
      ['an id of 19 digits', '/v1/posts/9223372036854775807'],
      ['an id past 2^63 − 1', '/v1/posts/9223372036854775808'],
      ['a zero id', '/v1/posts/0'],
      ['a leading zero', `/v1/posts/0${postId}`],
      ['a word', '/v1/posts/abc'],
      ['a trailing slash', `/v1/posts/${postId}/`],
      ['a percent-encoded digit', `/v1/posts/%3${String(postId).at(-1)!}`],
      ['an unknown query parameter', `/v1/posts/${postId}?expand=author`],
      ['a sub-resource', `/v1/posts/${postId}/views`],
      ['a credential', `/v1/posts/${postId}`, { authorization: 'Bearer not-a-token' }],
      ['a session of a user', `/v1/posts/${postId}`, user.auth],
      ['a cookie', `/v1/posts/${postId}`, { cookie: 'a=b' }],
      ['an Origin', `/v1/posts/${postId}`, { origin: 'https://elsewhere.example' }],
      ['an unknown post with If-None-Match: *', '/v1/posts/987654321', { 'if-none-match': '*' }],
      ['HEAD', `/v1/posts/${postId}`, {}, 'HEAD']
    ]
    await assertHandedOver(cases)
    const unknown = await overWire(undefined, '/v1/posts/987654321', { 'x-request-id': 'unknown-post' })
    assertError({ ...unknown, json: () => JSON.parse(unknown.body) }, 404, 'POST_NOT_FOUND')
    const invalid = await overWire(undefined, '/v1/posts/0', { 'x-request-id': 'zero-id' })
    assertError({ ...invalid, json: () => JSON.parse(invalid.body) }, 400, 'VALIDATION_ERROR', ['id'])
  })

  test('any path under the two routes: the same status and body over the wire as through Fastify\'s path', { timeout: 60_000 }, async () => {
    const suffix = fc.oneof(
      fc.constantFrom(String(postId), String(productId), '1', '0'),
      fc.stringMatching(/^[0-9]{1,20}$/),
      fc.stringMatching(/^[0-9a-z%./?=&-]{0,12}$/)
    )
    await fc.assert(fc.asyncProperty(fc.constantFrom('/v1/posts/', '/v1/products/'), suffix, async (prefix, rest) => {
      const { viaFastify, wire } = await both(`${prefix}${rest}`)
      assert.equal(wire.statusCode, viaFastify.statusCode)
      assert.equal(wire.body, viaFastify.body)
      assert.equal(wire.headers.etag, viaFastify.headers.etag)
    }), { numRuns: 150 })
  })
})

describe('fast reads and the parts of the request path they keep', () => {
  test('the rate limit: counted once per request, and the request past it refused by Fastify\'s path', async (t) => {
    const limited = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '2' })
    t.after(limited.close)
    const post = await createPostIn(limited)
    const answers: WireAnswer[] = []
    for (let i = 0; i < 3; i++) answers.push(await overWire(limited, `/v1/posts/${post}`))
    assert.deepEqual(answers.map((a) => a.statusCode), [200, 200, 429])
    assert.deepEqual(answers.slice(0, 2).map((a) => remaining(a.headers)), [1, 0])
    assertError({ ...answers[2]!, json: () => JSON.parse(answers[2]!.body) }, 429, 'TOO_MANY_REQUESTS')
    assert.match(String(answers[2]!.headers['retry-after']), /^[1-9]\d*$/)
    assert.equal(limited.app.fastReads.answered, 2)
  })

  test('behind TRUST_PROXY, the client is the forwarded address, as on Fastify\'s path', async (t) => {
    const proxied = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' })
    t.after(proxied.close)
    const post = await createPostIn(proxied)
    const from = async (address: string) => await overWire(proxied, `/v1/posts/${post}`, { 'x-forwarded-for': `not-an-address, ${address}` })
    assert.equal(remaining((await from('203.0.113.7')).headers), 1)
    assert.equal(remaining((await from('203.0.113.7')).headers), 0)
    assert.equal(remaining((await from('203.0.113.8')).headers), 1, 'another client, its own window')
    assert.equal((await from('203.0.113.7')).statusCode, 429)
    assert.equal(proxied.app.fastReads.answered, 3)
  })

  test('while draining, every read goes through Fastify\'s path and says Connection: close', async (t) => {
    const draining = await buildTestApp()
    t.after(draining.close)
    const post = await createPostIn(draining)
    assert.equal((await overWire(draining, `/v1/posts/${post}`)).statusCode, 200)
    assert.equal(draining.app.fastReads.answered, 1)
    draining.app.drain.begin()
    const res = await overWire(draining, `/v1/posts/${post}`)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.connection, 'close')
    assert.equal(draining.app.fastReads.answered, 1)
  })

  test('a database that fails: the read goes to Fastify\'s path, which answers 503 as for any request', { timeout: 30_000 }, async (t) => {
    const failing = await buildTestApp()
    t.after(failing.close)
    const post = await createPostIn(failing)
    assert.equal((await overWire(failing, `/v1/posts/${post}`)).statusCode, 200)
    await failing.app.db.destroy()
    for (const path of [`/v1/posts/${post}`, '/v1/products/1', '/v1/posts?limit=2', '/v1/products']) {
      const res = await overWire(failing, path)
      assertError({ ...res, json: () => JSON.parse(res.body) }, 503, 'SERVICE_UNAVAILABLE')
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/)
    }
    assert.equal(failing.app.fastReads.answered, 1)
  })

  test('with CORS configured, reads go through Fastify\'s path (its headers are the CORS plugin\'s)', async (t) => {
    const cors = await buildTestApp({ CORS_ORIGINS: 'https://app.example' })
    t.after(cors.close)
    const post = await createPostIn(cors)
    const res = await overWire(cors, `/v1/posts/${post}`)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.vary, 'Origin')
    assert.equal(cors.app.fastReads.answered, 0)
  })
})

/** A post in that app, made from addresses of their own, one per request (the tests' limits count 127.0.0.1's requests only). */
async function createPostIn (t: TestApp): Promise<number> {
  const email = `author-${++sequence}@example.com`
  const password = 'correct horse battery'
  assert.equal((await t.app.inject({ method: 'POST', url: '/v1/users', remoteAddress: '10.9.9.1', payload: { email, name: 'Author', password } })).statusCode, 201)
  const session = await t.app.inject({ method: 'POST', url: '/v1/sessions', remoteAddress: '10.9.9.2', payload: { email, password } })
  const res = await t.app.inject({ method: 'POST', url: '/v1/posts', remoteAddress: '10.9.9.3', headers: { authorization: `Bearer ${session.json().token as string}` }, payload: { title: 'T', content: 'C' } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id as number
}
