import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { walkPages } from '../list-walk.js'
import type { PostBody } from './fixtures.js'
import { write } from '../../src/db/write.js'

// GET /v1/posts with filters and sort: each filter and sort against the same rule applied in
// memory to the posts made here, over every page, and the cursor bound to its list.

const { app, close } = await buildTestApp()
after(close)
const [ann, bob] = [await createUser(app, { name: 'Ann' }), await createUser(app, { name: 'Bob' })]

// Posts at known times, one minute apart (written straight to the table: through the API they
// would all be created in the same few milliseconds), each with a view count that ties with
// another one's.
const made: PostBody[] = []
const start = Date.UTC(2026, 10, 1, 12)
const specs = [
  { author: ann, views: 3 }, { author: bob, views: 0 }, { author: ann, views: 7 }, { author: ann, views: 3 },
  { author: bob, views: 12 }, { author: bob, views: 0 }, { author: ann, views: 7 }, { author: bob, views: 1 }
]
for (const [i, spec] of specs.entries()) {
  const at = new Date(start + i * 60_000).toISOString()
  const row = await write(app.db, async (trx) => await trx.insertInto('posts').values({ author_id: spec.author.id, title: `Post ${i}`, content: `Content ${i}.`, views: spec.views, created_at: at, updated_at: at }).returning('id').executeTakeFirstOrThrow())
  made.push({ id: Number(row.id), title: `Post ${i}`, content: `Content ${i}.`, author: { id: spec.author.id, name: spec.author.name }, views: spec.views, createdAt: at, updatedAt: at })
}
const minute = (i: number, seconds = 0) => new Date(start + i * 60_000 + seconds * 1000).toISOString()

const walk = async (query: string, limit = 2) => await walkPages<PostBody>(app, `/v1/posts?${query}${query === '' ? '' : '&'}limit=${limit}`)
const ids = (posts: PostBody[]) => posts.map((p) => p.id)
const newestFirst = (a: PostBody, b: PostBody) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id

describe('GET /v1/posts filters and sort', () => {
  test('each filter, alone and together, over every page', async () => {
    const cases: Array<[string, (p: PostBody) => boolean]> = [
      [`authorId=${ann.id}`, (p) => p.author.id === ann.id],
      [`authorId=${bob.id}`, (p) => p.author.id === bob.id],
      ['authorId=999999', () => false],
      [`createdAfter=${minute(2)}`, (p) => p.createdAt > minute(2)],
      [`createdBefore=${minute(2)}`, (p) => p.createdAt < minute(2)],
      [`createdAfter=${minute(1, -1)}&createdBefore=${minute(4, 1)}`, (p) => p.createdAt >= minute(1) && p.createdAt <= minute(4)],
      // Offsets and a fraction below the millisecond: 12:03:00.0005Z is after 12:03:00.000Z.
      [`createdAfter=${encodeURIComponent('2026-11-01T14:02:00+02:00')}`, (p) => p.createdAt > minute(2)],
      [`createdBefore=${minute(3).replace('Z', '5Z')}`, (p) => p.createdAt <= minute(3)],
      [`createdAfter=${minute(3).replace('Z', '5Z')}`, (p) => p.createdAt > minute(3)],
      [`authorId=${bob.id}&createdAfter=${minute(1)}`, (p) => p.author.id === bob.id && p.createdAt > minute(1)]
    ]
    for (const [query, keep] of cases) {
      assert.deepEqual(ids(await walk(query)), ids(made.filter(keep).sort(newestFirst)), query)
    }
  })

  test('each sort, ties broken by id in the same direction, alone and with a filter', async () => {
    const cases: Array<[string, (a: PostBody, b: PostBody) => number]> = [
      ['', newestFirst],
      ['sort=-createdAt', newestFirst],
      ['sort=createdAt', (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id],
      ['sort=-views', (a, b) => b.views - a.views || b.id - a.id]
    ]
    for (const [query, compare] of cases) {
      for (const limit of [1, 3, 100]) {
        assert.deepEqual(ids(await walk(query, limit)), ids([...made].sort(compare)), `${query} limit ${limit}`)
      }
      const filtered = [query, `authorId=${ann.id}`].filter((part) => part !== '').join('&')
      assert.deepEqual(ids(await walk(filtered, 1)), ids(made.filter((p) => p.author.id === ann.id).sort(compare)), filtered)
    }
  })

  test('a view moves a post in the -views list, and a walk never repeats it', async () => {
    const res = await app.inject({ method: 'POST', url: `/v1/posts/${made[1]!.id}/views` })
    assert.equal(res.statusCode, 200)
    made[1]!.views += 1
    assert.deepEqual(ids(await walk('sort=-views', 3)), ids([...made].sort((a, b) => b.views - a.views || b.id - a.id)))
  })

  test('the Link keeps filters and sort', async () => {
    const res = await app.inject({ method: 'GET', url: `/v1/posts?authorId=${ann.id}&sort=-views&limit=2` })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers.link), new RegExp(`^</v1/posts\\?authorId=${ann.id}&sort=-views&limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$`))
  })
})

describe('GET /v1/posts cursors are bound to their sort and filters', () => {
  async function cursorOf (query: string): Promise<string> {
    const res = await app.inject({ method: 'GET', url: `/v1/posts?${query}&limit=1` })
    return new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
  }

  test('another sort or other filters: 400 CURSOR_MISMATCH; another limit or the default sort named: the same list', async () => {
    const cursor = await cursorOf(`authorId=${ann.id}&sort=-views`)
    for (const query of [`authorId=${ann.id}`, 'sort=-views', `authorId=${bob.id}&sort=-views`, `authorId=${ann.id}&sort=-views&createdAfter=${minute(0)}`, `authorId=${ann.id}&sort=-views&q=post`]) {
      assertError(await app.inject({ method: 'GET', url: `/v1/posts?${query}&cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
    }
    assert.equal((await app.inject({ method: 'GET', url: `/v1/posts?sort=-views&authorId=${ann.id}&limit=7&cursor=${cursor}` })).statusCode, 200)
    const plain = await cursorOf('')
    assert.equal((await app.inject({ method: 'GET', url: `/v1/posts?sort=-createdAt&cursor=${plain}` })).statusCode, 200)
  })

  test('a cursor of another kind, or with a key that is not one for its sort: 400 naming cursor', async () => {
    const fingerprintOf = async (query: string) => JSON.parse(Buffer.from(await cursorOf(query), 'base64url').toString().slice(3))[0] as string
    const forged = (fingerprint: string, key: unknown, id: unknown = '1') => Buffer.from(`v2:${JSON.stringify([fingerprint, key, id])}`).toString('base64url')
    const byViews = await fingerprintOf('sort=-views')
    const byTime = await fingerprintOf('')
    for (const [query, cursor] of [
      ['sort=-views', forged(byViews, 'many')], ['sort=-views', forged(byViews, '-1')], ['sort=-views', forged(byViews, '1.5')], ['sort=-views', forged(byViews, '2026-11-01T12:00:00.000Z')],
      ['', forged(byTime, '7')], ['', forged(byTime, '2026-11-01T12:00:00Z')], ['', forged(byTime, '2026-02-30T12:00:00.000Z')], ['', forged(byTime, minute(1), '0')],
      ['', Buffer.from('v1:5').toString('base64url')],
      // A fourth member says whether the next page starts among equal keys: 1 or nothing.
      ['', Buffer.from(`v2:${JSON.stringify([byTime, minute(1), '3', 2])}`).toString('base64url')], ['', Buffer.from(`v2:${JSON.stringify([byTime, minute(1), '3', true])}`).toString('base64url')]
    ] as const) {
      assertError(await app.inject({ method: 'GET', url: `/v1/posts?${query}&cursor=${cursor}` }), 400, 'VALIDATION_ERROR', ['cursor'])
    }
  })
})

describe('GET /v1/posts bad parameters', () => {
  const bad = async (query: string, fields: string[]) => {
    assertError(await app.inject({ method: 'GET', url: `/v1/posts?${query}` }), 400, 'VALIDATION_ERROR', fields)
  }

  test('each parameter on its own', async () => {
    for (const sort of ['views', '-views,createdAt', 'createdat', '', 'title', '-price', 'relevance']) await bad(`sort=${sort}`, ['sort'])
    await bad('sort=-views&sort=createdAt', ['sort'])
    for (const at of ['yesterday', '2026-11-01', '2026-11-01 12:00:00Z', '2026-02-30T00:00:00Z', '2026-11-01T24:00:00Z', '2026-11-01T12:00:00', '2026-11-01T12:00:00+25:00', '1700000000', '']) {
      await bad(`createdAfter=${encodeURIComponent(at)}`, ['createdAfter'])
      await bad(`createdBefore=${encodeURIComponent(at)}`, ['createdBefore'])
    }
    await bad(`createdAfter=${minute(1)}&createdAfter=${minute(2)}`, ['createdAfter'])
    await bad(`createdAfter=${minute(2)}&createdBefore=${minute(2)}`, ['createdAfter'])
    await bad(`createdAfter=${minute(3)}&createdBefore=${minute(2)}`, ['createdAfter'])
    await bad(`authorId=${ann.id}&authorId=${bob.id}`, ['authorId'])
    await bad('author=1', ['author'])
    await bad('views=3', ['views'])
  })

  test('all at once, one entry per parameter', async () => {
    await bad('sort=x&createdAfter=x&createdBefore=y&authorId=0&q=***&limit=0&cursor=%21&page=2', ['sort', 'createdAfter', 'createdBefore', 'authorId', 'q', 'limit', 'cursor', 'page'])
    // The rule between the two bounds is reported with the others.
    await bad(`createdAfter=${minute(3)}&createdBefore=${minute(2)}&sort=up`, ['createdAfter', 'sort'])
    // A bound that failed its own rule is not compared with the other.
    await bad(`createdAfter=${minute(3)}&createdBefore=${minute(2)}&createdBefore=${minute(4)}`, ['createdBefore'])
  })
})
