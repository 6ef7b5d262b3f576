import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { createPost, type PostBody } from './fixtures.js'

// GET /v1/posts?q=: the database's own text search (FTS5 on SQLite, tsvector on PostgreSQL) over
// title and content, the same answers on both for plain English words, prefixes and phrases.

const { app, close } = await buildTestApp()
after(close)
const [ann, bob] = [await createUser(app, { name: 'Ann' }), await createUser(app, { name: 'Bob' })]

const byTitle: Record<string, PostBody> = {}
for (const [author, title, content] of [
  [ann, 'Postgres replication', 'Streaming replication keeps a standby in step with the primary.'],
  [bob, 'Replicas at scale', 'Read replicas take the load of reports off the primary.'],
  [ann, 'Baking bread', 'Flour, water, salt and time: the oldest recipe there is.'],
  [bob, 'Streaming music', 'A note on codecs; nothing about databases.'],
  [ann, 'Notes on Postgres', 'Postgres, postgres and again Postgres: replication is only one chapter.'],
  [bob, 'Garden notes', 'Tomatoes like the sun']
] as const) byTitle[title] = await createPost(app, author, { title, content })

async function search (query: string): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/posts?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return (res.json() as PostBody[]).map((p) => p.title)
}
const sorted = (titles: string[]) => [...titles].sort()
const q = (text: string) => `q=${encodeURIComponent(text)}`

describe('GET /v1/posts?q=', () => {
  test('words are found in the title or in the content, by stem and in any case; all words must match, each anywhere', async () => {
    assert.deepEqual(sorted(await search(q('replication'))), ['Notes on Postgres', 'Postgres replication'])
    assert.deepEqual(sorted(await search(q('REPLICAS'))), ['Replicas at scale'])
    assert.deepEqual(sorted(await search(q('primary'))), ['Postgres replication', 'Replicas at scale'])
    // One word in the title, the other in the content.
    assert.deepEqual(await search(q('garden tomatoes')), ['Garden notes'])
    assert.deepEqual(sorted(await search(q('stream'))), ['Postgres replication', 'Streaming music'])
    assert.deepEqual(await search(q('violin')), [])
  })

  test('a prefix ends in *', async () => {
    // A prefix is read through the stemmer like a word: `replic*` finds replication and replicas.
    assert.deepEqual(sorted(await search(q('replic*'))), ['Notes on Postgres', 'Postgres replication', 'Replicas at scale'])
    assert.deepEqual(sorted(await search(q('note* garden'))), ['Garden notes'])
  })

  test('a quoted phrase matches its words in order, within the title or within the content, never across the two', async () => {
    assert.deepEqual(await search(q('"streaming replication"')), ['Postgres replication'])
    assert.deepEqual(await search(q('"replication streaming"')), [])
    // Punctuation only separates words: "Postgres: replication" in a content is the phrase too.
    assert.deepEqual(sorted(await search(q('"postgres replication"'))), ['Notes on Postgres', 'Postgres replication'])
    // "Garden notes" ends the title and "Tomatoes" starts the content.
    assert.deepEqual(await search(q('"notes tomatoes"')), [])
  })

  test('without sort, posts whose title has every term first, then the others, each newest first; with a sort or filters, their order and rules', async () => {
    assert.deepEqual(await search(q('replication')), ['Postgres replication', 'Notes on Postgres'])
    assert.deepEqual(await search(q('primary')), ['Replicas at scale', 'Postgres replication'])
    assert.deepEqual(await search(q('postgres')), ['Notes on Postgres', 'Postgres replication'])
    assert.deepEqual(await search(q('note*')), ['Garden notes', 'Notes on Postgres', 'Streaming music'])
    // Every term: "postgres" is in both titles, "replication" only in one.
    assert.deepEqual(await search(q('postgres replication')), ['Postgres replication', 'Notes on Postgres'])
    assert.deepEqual(await search(q('"streaming replication"')), ['Postgres replication'])
    assert.deepEqual(await search(`${q('replication')}&sort=createdAt`), ['Postgres replication', 'Notes on Postgres'])
    assert.deepEqual(await search(`${q('primary')}&authorId=${bob.id}`), ['Replicas at scale'])
    const at = byTitle['Notes on Postgres']!.createdAt
    assert.deepEqual(await search(`${q('replication')}&createdBefore=${at}`), ['Postgres replication'])
  })

  test('pages of a search, by relevance and by each sort, hold every match once', async () => {
    for (const query of [q('replic*'), `${q('replic*')}&sort=-views`, `${q('the')}&sort=createdAt`, q('p*')]) {
      const all = await search(`${query}&limit=100`)
      const walked = (await walkPages<PostBody>(app, `/v1/posts?${query}&limit=1`)).map((p) => p.title)
      assert.deepEqual(walked, all, query)
    }
  })

  test('the index follows every write in its transaction; a view changes nothing in it', async () => {
    const post = await createPost(app, ann, { title: 'Brass lantern', content: 'It lights the shed.' })
    assert.deepEqual(await search(q('lantern')), ['Brass lantern'])
    assert.deepEqual(await search(q('shed')), ['Brass lantern'])
    let res = await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: ann.auth, payload: { title: 'Copper kettle' } })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(await search(q('lantern')), [])
    assert.deepEqual(await search(q('kettle shed')), ['Copper kettle'])
    res = await app.inject({ method: 'PUT', url: `/v1/posts/${post.id}`, headers: ann.auth, payload: { title: 'Copper kettle', content: 'It boils water.' } })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(await search(q('shed')), [])
    assert.deepEqual(await search(q('boils')), ['Copper kettle'])
    assert.equal((await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/views` })).statusCode, 200)
    assert.deepEqual(await search(q('boils')), ['Copper kettle'])
    res = await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}`, headers: ann.auth })
    assert.equal(res.statusCode, 204)
    assert.deepEqual(await search(q('boils')), [])
  })

  test('the posts of a deleted account leave the index with them', async () => {
    const carl = await createUser(app, { name: 'Carl' })
    await createPost(app, carl, { title: 'Zeppelin', content: 'Airships.' })
    assert.deepEqual(await search(q('zeppelin')), ['Zeppelin'])
    const res = await app.inject({ method: 'DELETE', url: `/v1/users/${carl.id}`, headers: carl.auth })
    assert.equal(res.statusCode, 204, res.body)
    assert.deepEqual(await search(q('zeppelin')), [])
  })

  test('query syntax of either database is only text: never an error, never an operator', async () => {
    for (const text of ['postgres"', 'postgres OR bread', 'NEAR(postgres replication)', 'title:postgres', 'content:bread', '-postgres', 'postgres^', "post'gres", 'postgres\\', '(postgres', 'postgres & bread | !salt', 'postgres:*', 'postgres <-> replication', '{postgres}', 'post* *', '"" postgres']) {
      const res = await app.inject({ method: 'GET', url: `/v1/posts?${q(text)}` })
      assert.equal(res.statusCode, 200, `${text}: ${res.body}`)
    }
    // A column filter of FTS5 is two words here, both of which must match.
    assert.deepEqual(await search(q('title:bread')), [])
    assert.deepEqual(await search(q('garden | tomatoes')), ['Garden notes'])
  })

  test('bad q: 400 naming q, with the other bad parameters', async () => {
    for (const text of ['', '   ', '***', '"" ()', '-', 'x'.repeat(201), '\u0000postgres']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/posts?${q(text)}` }), 400, 'VALIDATION_ERROR', ['q'])
    }
    assertError(await app.inject({ method: 'GET', url: '/v1/posts?q=a&q=b' }), 400, 'VALIDATION_ERROR', ['q'])
    assert.equal((await app.inject({ method: 'GET', url: `/v1/posts?q=${'x'.repeat(200)}` })).statusCode, 200)
    assertError(await app.inject({ method: 'GET', url: '/v1/posts?q=***&sort=views&authorId=x' }), 400, 'VALIDATION_ERROR', ['q', 'sort', 'authorId'])
  })

  test('a cursor of one search is refused for another and for the plain list', async () => {
    const res = await app.inject({ method: 'GET', url: `/v1/posts?${q('replic*')}&limit=1` })
    const cursor = new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
    assertError(await app.inject({ method: 'GET', url: `/v1/posts?${q('replication')}&cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
    assertError(await app.inject({ method: 'GET', url: `/v1/posts?cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
  })
})
