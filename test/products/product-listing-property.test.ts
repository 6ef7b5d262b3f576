import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp } from '../helper.js'
import { walkPages } from '../list-walk.js'
import type { ProductJson } from './fixtures.js'
import { write } from '../../src/db/write.js'

// Property: for random products and a random list (filters, a search, sort, page size), walking every page
// by its Link returns exactly what a plain filter and sort in memory of the same rows returns,
// in order, while products are inserted and deleted between pages: each row there from the
// first page to the last appears once, in its place; a row added or removed meanwhile appears
// at most once, and where the order puts it. Rows are written straight into the table so that
// creation times can tie and disagree with the ids' order, as concurrent writers make them.

const { app, close } = await buildTestApp()
after(close)

const CATEGORIES = ['BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS'] as const
const SORTS = ['-createdAt', 'createdAt', 'price', '-price', 'name'] as const

// Words that both stemmers (Porter on SQLite, Snowball's English on PostgreSQL) leave as they
// are and that neither takes for a stop word, so that a search can be judged in memory.
const WORDS = ['red', 'blue', 'oak', 'desk', 'lamp', 'pen'] as const
const PREFIXES = ['bl', 'des', 'lam'] as const

const product = fc.record({
  name: fc.oneof(
    fc.constantFrom('a', 'A', 'b', 'Ab', 'ab', 'Z', 'é', 'É', 'a b', '😀', 'zz'),
    fc.array(fc.constantFrom(...WORDS, 'Red', 'Desk'), { minLength: 1, maxLength: 4 }).map((words) => words.join(' '))
  ),
  price: fc.constantFrom(1, 5, 5, 10, 999, 1_000_000_000),
  category: fc.constantFrom(...CATEGORIES),
  stock: fc.constantFrom(0, 0, 1, 7),
  onSale: fc.boolean(),
  // A few distinct instants, so that creation times tie.
  createdAt: fc.integer({ min: 0, max: 5 }).map((s) => new Date(Date.UTC(2026, 10, 20, 10, 0, s)).toISOString())
})
type Spec = typeof product extends fc.Arbitrary<infer T> ? T : never

// Each filter is left out half the time (fast-check's default leaves one out 1 time in 5), so
// that lists of several filters still hold rows often enough to judge.
const listing = fc.record({
  category: fc.option(fc.uniqueArray(fc.constantFrom(...CATEGORIES), { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 2 }),
  onSale: fc.option(fc.boolean(), { nil: undefined, freq: 2 }),
  inStock: fc.option(fc.boolean(), { nil: undefined, freq: 2 }),
  minPrice: fc.option(fc.constantFrom(1, 5, 6, 999), { nil: undefined, freq: 2 }),
  maxPrice: fc.option(fc.constantFrom(5, 999, 1_000_000_000), { nil: undefined, freq: 2 }),
  sort: fc.option(fc.constantFrom(...SORTS), { nil: undefined, freq: 2 }),
  // A search of one or two terms: a word, a prefix or a two-word phrase.
  q: fc.option(fc.array(fc.oneof(
    fc.constantFrom(...WORDS).map((word) => ({ word })),
    fc.constantFrom(...PREFIXES).map((prefix) => ({ prefix })),
    fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...WORDS)).map((phrase) => ({ phrase }))
  ), { minLength: 1, maxLength: 2 }), { nil: undefined, freq: 2 })
}).filter((l) => l.minPrice === undefined || l.maxPrice === undefined || l.minPrice <= l.maxPrice)
type Listing = typeof listing extends fc.Arbitrary<infer T> ? T : never

async function insert (spec: Spec): Promise<void> {
  await write(app.db, async (trx) => await trx.insertInto('products').values({
    name: spec.name, price: spec.price, category: spec.category, stock: spec.stock, on_sale: spec.onSale ? 1 : 0, created_at: spec.createdAt, updated_at: spec.createdAt
  }).execute())
}

async function all (): Promise<ProductJson[]> {
  const rows = await app.db.selectFrom('products').selectAll().execute()
  return rows.map((r) => ({
    id: Number(r.id), name: r.name, price: Number(r.price), category: r.category, stock: Number(r.stock), onSale: Number(r.on_sale) === 1,
    createdAt: new Date(r.created_at).toISOString(), updatedAt: new Date(r.updated_at).toISOString()
  }))
}

const codePoints = (s: string) => [...s].map((c) => c.codePointAt(0)!)
function byCodePoint (a: string, b: string): number {
  const x = codePoints(a)
  const y = codePoints(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return x.length - y.length
}

type Term = NonNullable<Listing['q']>[number]
const textOf = (terms: Term[]) => terms.map((t) => 'word' in t ? t.word : 'prefix' in t ? `${t.prefix}*` : `"${t.phrase.join(' ')}"`).join(' ')

/** Whether a name has every term: a word, a word that starts with the prefix, two words in a row. */
function found (name: string, terms: Term[]): boolean {
  const words: string[] = name.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  return terms.every((t) => 'word' in t
    ? words.includes(t.word)
    : 'prefix' in t ? words.some((w) => w.startsWith(t.prefix)) : words.some((w, i) => w === t.phrase[0] && words[i + 1] === t.phrase[1]))
}

function keeps (l: Listing): (p: ProductJson) => boolean {
  return (p) => (l.q === undefined || found(p.name, l.q)) && (l.category === undefined || l.category.includes(p.category as typeof CATEGORIES[number])) &&
    (l.onSale === undefined || p.onSale === l.onSale) &&
    (l.inStock === undefined || (p.stock > 0) === l.inStock) &&
    (l.minPrice === undefined || p.price >= l.minPrice) &&
    (l.maxPrice === undefined || p.price <= l.maxPrice)
}

function compare (sort: Listing['sort']): (a: ProductJson, b: ProductJson) => number {
  switch (sort ?? '-createdAt') {
    case '-createdAt': return (a, b) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id
    case 'createdAt': return (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id
    case 'price': return (a, b) => a.price - b.price || a.id - b.id
    case '-price': return (a, b) => b.price - a.price || b.id - a.id
    default: return (a, b) => byCodePoint(a.name, b.name) || a.id - b.id
  }
}

function queryOf (l: Listing, limit: number): string {
  const params = new URLSearchParams()
  for (const c of l.category ?? []) params.append('category', c)
  for (const name of ['onSale', 'inStock', 'minPrice', 'maxPrice', 'sort'] as const) if (l[name] !== undefined) params.set(name, String(l[name]))
  if (l.q !== undefined) params.set('q', textOf(l.q))
  params.set('limit', String(limit))
  return params.toString()
}

test('every page walk equals the in-memory filter and sort, under inserts and deletes between pages', async () => {
  await fc.assert(fc.asyncProperty(
    fc.array(product, { maxLength: 25 }),
    listing,
    fc.integer({ min: 1, max: 6 }),
    fc.array(fc.oneof(product.map((spec) => ({ insert: spec })), fc.nat().map((n) => ({ remove: n }))), { maxLength: 8 }),
    async (specs, l, limit, changes) => {
      await write(app.db, async (trx) => await trx.deleteFrom('products').execute())
      for (const spec of specs) await insert(spec)
      const before = await all()
      const removed = new Set<number>()
      // Searched without a sort, the order is by relevance, which each database ranks its own way
      // (docs/api.md): then only which rows come, once each, is judged, not their order.
      const byRelevance = l.q !== undefined && l.sort === undefined
      const order = compare(l.sort)
      // Between pages: one change, if any are left.
      const walked = await walkPages<ProductJson>(app, `/v1/products?${queryOf(l, limit)}`, {}, async (page) => {
        const change = changes[page]
        if (change === undefined) return
        if ('insert' in change) await insert(change.insert)
        else {
          const present = (await all()).map((p) => p.id)
          const victim = present[change.remove % Math.max(1, present.length)]
          if (victim !== undefined) {
            await write(app.db, async (trx) => await trx.deleteFrom('products').where('id', '=', BigInt(victim)).execute())
            removed.add(victim)
          }
        }
      })
      const keep = keeps(l)
      // In order, each row once.
      if (!byRelevance) for (let i = 1; i < walked.length; i++) assert.ok(order(walked[i - 1]!, walked[i]!) < 0, `out of order at ${i}: ${JSON.stringify(walked.slice(i - 1, i + 1))}`)
      assert.equal(new Set(walked.map((p) => p.id)).size, walked.length, 'each row once')
      // Only rows of the list.
      for (const p of walked) assert.ok(keep(p), `does not match: ${JSON.stringify(p)}`)
      // Every row there throughout, and nothing made up (a row came from the table at some time).
      const expected = before.filter((p) => keep(p) && !removed.has(p.id)).sort(order).map((p) => p.id)
      const walkedIds = walked.map((p) => p.id)
      if (byRelevance) assert.deepEqual(walkedIds.filter((id) => expected.includes(id)).sort((a, b) => a - b), [...expected].sort((a, b) => a - b))
      else assert.deepEqual(walkedIds.filter((id) => expected.includes(id)), expected)
      const knownIds = new Set([...before, ...await all()].map((p) => p.id))
      for (const id of walkedIds) assert.ok(knownIds.has(id) || removed.has(id), `unknown product ${id}`)
    }
  ), { numRuns: 80 })
})
