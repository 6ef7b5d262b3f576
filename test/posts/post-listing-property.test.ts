import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, createUser } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { instant, timeBound } from '../time-bounds.js'
import type { PostBody } from './fixtures.js'
import { write } from '../../src/db/write.js'

// Property: for random posts and a random list (author, time bounds, a search, sort or relevance,
// page size), walking every page by its Link returns exactly what a plain filter and sort in
// memory of the same rows returns, in order, while posts are inserted, deleted and viewed between pages: each
// row there from the first page to the last and left alone appears once, in its place; a row
// added, removed or viewed meanwhile appears at most once, and where the order puts it. Rows are
// written straight into the table so that creation times can tie and disagree with the ids.

const { app, close } = await buildTestApp()
after(close)
const authors = [await createUser(app, { name: 'Ann' }), await createUser(app, { name: 'Bob' })]

const SORTS = ['-createdAt', 'createdAt', '-views'] as const
// Words that both stemmers leave as they are and neither takes for a stop word (as in the
// products' property), so that a search can be judged in memory.
const WORDS = ['red', 'blue', 'oak', 'desk', 'lamp', 'pen'] as const
const PREFIXES = ['bl', 'des', 'lam'] as const

const text = fc.array(fc.constantFrom(...WORDS, 'Red', 'Desk', 'x'), { minLength: 1, maxLength: 4 }).map((words) => words.join(' '))

const post = fc.record({
  author: fc.constantFrom(0, 1),
  title: text,
  content: text,
  views: fc.constantFrom(0, 0, 1, 3),
  second: fc.integer({ min: 0, max: 4 })
})
type Spec = typeof post extends fc.Arbitrary<infer T> ? T : never

// Each filter is left out half the time, so that lists of several filters still hold rows.
const listing = fc.record({
  author: fc.option(fc.constantFrom(0, 1), { nil: undefined, freq: 2 }),
  after: fc.option(timeBound, { nil: undefined, freq: 2 }),
  before: fc.option(timeBound, { nil: undefined, freq: 2 }),
  sort: fc.option(fc.constantFrom(...SORTS), { nil: undefined, freq: 2 }),
  q: fc.option(fc.array(fc.oneof(
    fc.constantFrom(...WORDS).map((word) => ({ word })),
    fc.constantFrom(...PREFIXES).map((prefix) => ({ prefix })),
    fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...WORDS)).map((phrase) => ({ phrase }))
  ), { minLength: 1, maxLength: 2 }), { nil: undefined, freq: 2 })
}).filter((l) => l.after === undefined || l.before === undefined || l.after.ms < l.before.ms)
type Listing = typeof listing extends fc.Arbitrary<infer T> ? T : never

async function insert (spec: Spec): Promise<void> {
  const at = instant(spec.second)
  await write(app.db, async (trx) => await trx.insertInto('posts').values({ author_id: authors[spec.author]!.id, title: spec.title, content: spec.content, views: spec.views, created_at: at, updated_at: at }).execute())
}

async function all (): Promise<PostBody[]> {
  const rows = await app.db.selectFrom('posts').selectAll().execute()
  return rows.map((r) => ({
    id: Number(r.id), title: r.title, content: r.content, author: { id: Number(r.author_id), name: '' }, views: Number(r.views),
    createdAt: new Date(r.created_at).toISOString(), updatedAt: new Date(r.updated_at).toISOString()
  }))
}

type Term = NonNullable<Listing['q']>[number]
const textOf = (terms: Term[]) => terms.map((t) => 'word' in t ? t.word : 'prefix' in t ? `${t.prefix}*` : `"${t.phrase.join(' ')}"`).join(' ')
const wordsOf = (s: string): string[] => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/** Whether a text has the term: a word, a word that starts with the prefix, two words in a row. */
function has (text: string, t: Term): boolean {
  const words = wordsOf(text)
  return 'word' in t ? words.includes(t.word) : 'prefix' in t ? words.some((w) => w.startsWith(t.prefix)) : words.some((w, i) => w === t.phrase[0] && words[i + 1] === t.phrase[1])
}
/** Each term in the title or the content (a phrase within one of them). */
const found = (p: PostBody, terms: Term[]) => terms.every((t) => has(p.title, t) || has(p.content, t))
/** Relevance: posts whose title has every term first, then newest first. */
const titleHasAll = (p: PostBody, terms: Term[]) => terms.every((t) => has(p.title, t))

function keeps (l: Listing): (p: PostBody) => boolean {
  return (p) => (l.q === undefined || found(p, l.q)) &&
    (l.author === undefined || p.author.id === authors[l.author]!.id) &&
    (l.after === undefined || Date.parse(p.createdAt) > l.after.ms) &&
    (l.before === undefined || Date.parse(p.createdAt) < l.before.ms)
}

function compare (sort: Listing['sort'], terms?: Term[]): (a: PostBody, b: PostBody) => number {
  if (sort === undefined && terms !== undefined) {
    return (a, b) => Number(titleHasAll(b, terms)) - Number(titleHasAll(a, terms)) || b.createdAt.localeCompare(a.createdAt) || b.id - a.id
  }
  switch (sort ?? '-createdAt') {
    case '-createdAt': return (a, b) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id
    case 'createdAt': return (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id
    default: return (a, b) => b.views - a.views || b.id - a.id
  }
}

function queryOf (l: Listing, limit: number): string {
  const params = new URLSearchParams()
  if (l.author !== undefined) params.set('authorId', String(authors[l.author]!.id))
  if (l.after !== undefined) params.set('createdAfter', l.after.text)
  if (l.before !== undefined) params.set('createdBefore', l.before.text)
  if (l.sort !== undefined) params.set('sort', l.sort)
  if (l.q !== undefined) params.set('q', textOf(l.q))
  params.set('limit', String(limit))
  return params.toString()
}

test('every page walk equals the in-memory filter and sort, under inserts, deletes and views between pages', async () => {
  await fc.assert(fc.asyncProperty(
    fc.array(post, { maxLength: 25 }),
    listing,
    fc.integer({ min: 1, max: 6 }),
    fc.array(fc.oneof(post.map((spec) => ({ insert: spec })), fc.nat().map((n) => ({ remove: n })), fc.nat().map((n) => ({ view: n }))), { maxLength: 8 }),
    async (specs, l, limit, changes) => {
      await write(app.db, async (trx) => await trx.deleteFrom('posts').execute())
      for (const spec of specs) await insert(spec)
      const before = await all()
      const removed = new Set<number>()
      const viewed = new Set<number>()
      const order = compare(l.sort, l.q)
      const walked = await walkPages<PostBody>(app, `/v1/posts?${queryOf(l, limit)}`, {}, async (page) => {
        const change = changes[page]
        if (change === undefined) return
        if ('insert' in change) return await insert(change.insert)
        const present = (await all()).map((p) => p.id)
        const target = present[('remove' in change ? change.remove : change.view) % Math.max(1, present.length)]
        if (target === undefined) return
        if ('remove' in change) {
          await write(app.db, async (trx) => await trx.deleteFrom('posts').where('id', '=', BigInt(target)).execute())
          removed.add(target)
        } else {
          assert.equal((await app.inject({ method: 'POST', url: `/v1/posts/${target}/views` })).statusCode, 200)
          viewed.add(target)
        }
      })
      const keep = keeps(l)
      // In order (each item as it was read), each row once, only rows of the list.
      for (let i = 1; i < walked.length; i++) assert.ok(order(walked[i - 1]!, walked[i]!) < 0, `out of order at ${i}: ${JSON.stringify(walked.slice(i - 1, i + 1))}`)
      assert.equal(new Set(walked.map((p) => p.id)).size, walked.length, 'each row once')
      for (const p of walked) assert.ok(keep(p), `does not match: ${JSON.stringify(p)} for ${queryOf(l, limit)}`)
      // Every row there throughout and left alone, in its place.
      const expected = before.filter((p) => keep(p) && !removed.has(p.id) && !viewed.has(p.id)).sort(order).map((p) => p.id)
      const walkedIds = walked.map((p) => p.id)
      const kept = walkedIds.filter((id) => expected.includes(id))
      assert.deepEqual(kept, expected, queryOf(l, limit))
      const knownIds = new Set([...before, ...await all()].map((p) => p.id))
      for (const id of walkedIds) assert.ok(knownIds.has(id) || removed.has(id), `unknown post ${id}`)
    }
  ), { numRuns: 80 })
})
