import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { assertError, buildTestApp, createUser, type TestUser } from '../helper.js'
import { assertPostShape, createPost, type PostBody } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const list = (query = '') => app.inject({ method: 'GET', url: `/v1/posts${query}` })
const ids = (posts: PostBody[]) => posts.map((p) => p.id)
/** The target of a `Link: <…>; rel="next"` header, or undefined. */
function nextLink (header: unknown): string | undefined {
  if (header === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(header))
  assert.ok(match, `Link header: ${String(header)}`)
  return match[1]
}

// Runs first, before the describe block's `before` fills the collection.
test('an empty collection is 200 [] with no Link', async () => {
  const res = await list()
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), [])
  assert.equal(res.headers.link, undefined)
})

describe('GET /v1/posts', () => {
  let alice: TestUser, bob: TestUser
  const aliceIds: number[] = []; const bobIds: number[] = []
  before(async () => {
    alice = await createUser(app, { name: 'Alice' })
    bob = await createUser(app, { name: 'Bob' })
    for (let i = 0; i < 23; i++) aliceIds.push((await createPost(app, alice, { title: `Alice ${i}` })).id)
    for (let i = 0; i < 7; i++) bobIds.push((await createPost(app, bob, { title: `Bob ${i}` })).id)
  })
  const allIds = () => [...aliceIds, ...bobIds].sort((a, b) => b - a)

  test('newest first, 20 by default, each item the full representation', async () => {
    const res = await list()
    assert.equal(res.statusCode, 200)
    const posts = res.json() as PostBody[]
    assert.deepEqual(ids(posts), allIds().slice(0, 20))
    posts.forEach(assertPostShape)
    assert.deepEqual(posts.find((p) => p.id === bobIds[0])!.author, { id: bob.id, name: 'Bob' })
    assert.equal(nextLink(res.headers.link)?.startsWith('/v1/posts?cursor='), true)
  })

  test('paging through 4 pages by following Link: every post once, in order, no Link on the last page', async () => {
    let target: string | undefined = '/v1/posts?limit=8'
    const seen: number[] = []; let pages = 0
    while (target !== undefined) {
      const res: LightMyRequestResponse = await app.inject({ method: 'GET', url: target })
      assert.equal(res.statusCode, 200, res.body)
      const page = ids(res.json())
      pages += 1
      assert.ok(page.length <= 8)
      seen.push(...page)
      target = nextLink(res.headers.link)
      if (target !== undefined) assert.match(target, /[?&]limit=8(&|$)/)
    }
    assert.equal(pages, 4)
    assert.deepEqual(seen, allIds())
  })

  test('when the last page is exactly full there is no Link pointing at an empty page', async () => {
    const res = await list('?limit=30')
    assert.equal(res.json().length, 30)
    assert.equal(res.headers.link, undefined)
    const all = await list('?limit=100')
    assert.deepEqual(ids(all.json()), allIds())
  })

  test('authorId filters, and the Link keeps the filter and the limit', async () => {
    const first = await list(`?authorId=${bob.id}&limit=3`)
    assert.deepEqual(ids(first.json()), [...bobIds].reverse().slice(0, 3))
    const next = nextLink(first.headers.link)!
    assert.match(next, new RegExp(`[?&]authorId=${bob.id}(&|$)`))
    assert.match(next, /[?&]limit=3(&|$)/)
    const collected = [...ids(first.json())]
    let target: string | undefined = next
    while (target !== undefined) {
      const res = await app.inject({ method: 'GET', url: target })
      collected.push(...ids(res.json()))
      target = nextLink(res.headers.link)
    }
    assert.deepEqual(collected, [...bobIds].reverse())
    assert.ok((first.json() as PostBody[]).every((p) => p.author.id === bob.id))
  })

  test('an author with no posts, or no such user, gives []', async () => {
    const carol = await createUser(app)
    assert.deepEqual((await list(`?authorId=${carol.id}`)).json(), [])
    assert.deepEqual((await list('?authorId=9223372036854775807')).json(), [])
  })

  test('a cursor is valid only for its own list: another filter or sort is 400 CURSOR_MISMATCH, another limit is fine', async () => {
    const cursorUrl = nextLink((await list('?limit=5')).headers.link)!
    const cursor = new URL(cursorUrl, 'http://x').searchParams.get('cursor')!
    for (const other of [`authorId=${alice.id}`, 'sort=createdAt', 'sort=-views', 'q=post', 'createdAfter=2000-01-01T00:00:00Z']) {
      assertError(await list(`?${other}&cursor=${cursor}`), 400, 'CURSOR_MISMATCH')
    }
    assert.deepEqual(ids((await list(`?sort=-createdAt&limit=3&cursor=${cursor}`)).json()), allIds().slice(5, 8))
  })

  test('an invalid limit is 400 on field limit', async () => {
    for (const limit of ['0', '101', '-1', '1.5', 'abc', '', 'true', '1000000000000000000000']) {
      assertError(await list(`?limit=${limit}`), 400, 'VALIDATION_ERROR', ['limit'])
    }
    assertError(await list('?limit=1&limit=2'), 400, 'VALIDATION_ERROR', ['limit'])
    for (const limit of ['1', '100']) assert.equal((await list(`?limit=${limit}`)).json().length, Number(limit) === 1 ? 1 : 30)
  })

  test('an invalid cursor is 400 on field cursor', async () => {
    const forged = (text: string) => Buffer.from(text).toString('base64url')
    for (const cursor of ['garbage!', 'abc', '', forged('v1:0'), forged('v1:-5'), forged('v2:10'), forged('v1:9223372036854775808'), forged('v1:1.5'), 'x'.repeat(300), '%00']) {
      assertError(await list(`?cursor=${cursor}`), 400, 'VALIDATION_ERROR', ['cursor'])
    }
  })

  test('an invalid authorId is 400 on field authorId', async () => {
    for (const authorId of ['0', '-1', 'abc', '1.5', '9223372036854775808', '', '01']) {
      assertError(await list(`?authorId=${authorId}`), 400, 'VALIDATION_ERROR', ['authorId'])
    }
  })

  test('every bad query field is reported at once', async () => {
    assertError(await list('?limit=0&cursor=nope&authorId=x'), 400, 'VALIDATION_ERROR', ['limit', 'cursor', 'authorId'])
    assertError(await list('?offset=10&limit=500'), 400, 'VALIDATION_ERROR', ['limit', 'offset'])
  })

  test('an unknown query parameter is refused by name, never read as an OFFSET', async () => {
    assertError(await list('?offset=25&page=3&limit=5'), 400, 'VALIDATION_ERROR', ['offset', 'page'])
  })
})
