import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { createProduct, type ProductJson } from './fixtures.js'

// GET /v1/products?q=: the database's own text search (FTS5 on SQLite, tsvector on PostgreSQL),
// the same answers on both for plain English words, prefixes and phrases.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

const named: Record<string, ProductJson> = {}
for (const [name, price, category] of [
  ['Paper notebook', 1500, 'BOOK'],
  ['Notebooks, set of three', 3000, 'BOOK'],
  ['Note pad', 500, 'HOME'],
  ['Notebook of paper scraps', 700, 'HOME'],
  ['Running shoes', 9000, 'SPORTS'],
  ['Notebook notebook cover', 900, 'HOME'],
  ['Garden hose', 2500, 'HOME']
] as const) named[name] = await createProduct(app, admin, { name, price, category })

async function search (query: string): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/products?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return (res.json() as ProductJson[]).map((p) => p.name)
}
const sorted = (names: string[]) => [...names].sort()

describe('GET /v1/products?q=', () => {
  test('words match by stem and in any case; all words must match', async () => {
    assert.deepEqual(sorted(await search('q=notebook')), sorted(['Paper notebook', 'Notebooks, set of three', 'Notebook of paper scraps', 'Notebook notebook cover']))
    assert.deepEqual(sorted(await search('q=NOTEBOOKS')), sorted(await search('q=notebook')))
    assert.deepEqual(sorted(await search('q=paper%20notebook')), sorted(['Paper notebook', 'Notebook of paper scraps']))
    assert.deepEqual(await search('q=run'), ['Running shoes'])
    assert.deepEqual(await search('q=violin'), [])
  })

  test('a prefix ends in *', async () => {
    assert.deepEqual(sorted(await search('q=note*')), sorted(['Paper notebook', 'Notebooks, set of three', 'Note pad', 'Notebook of paper scraps', 'Notebook notebook cover']))
    assert.deepEqual(await search('q=gard*%20hos*'), ['Garden hose'])
  })

  test('a quoted phrase matches its words in order', async () => {
    assert.deepEqual(await search(`q=${encodeURIComponent('"paper notebook"')}`), ['Paper notebook'])
    assert.deepEqual(await search(`q=${encodeURIComponent('"notebook paper"')}`), [])
    // An unclosed quote runs to the end; a quoted single word is a word.
    assert.deepEqual(await search(`q=${encodeURIComponent('"paper notebook')}`), ['Paper notebook'])
    assert.deepEqual(sorted(await search(`q=${encodeURIComponent('"pad"')}`)), ['Note pad'])
  })

  test('without sort the best match comes first; ties newest first', async () => {
    const names = await search('q=notebook')
    assert.equal(names[0], 'Notebook notebook cover')
    assert.deepEqual(names.slice(1), ['Notebook of paper scraps', 'Notebooks, set of three', 'Paper notebook'])
  })

  test('with filters and a sort', async () => {
    assert.deepEqual(await search('q=notebook&category=HOME&sort=price'), ['Notebook of paper scraps', 'Notebook notebook cover'])
    assert.deepEqual(await search('q=notebook&maxPrice=1000&sort=-price'), ['Notebook notebook cover', 'Notebook of paper scraps'])
  })

  test('pages of a search, by relevance and by a sort, hold every match once', async () => {
    for (const query of ['q=note*', 'q=note*&sort=name', 'q=notebook&sort=-createdAt']) {
      const all = await search(`${query}&limit=100`)
      const walked = (await walkPages<ProductJson>(app, `/v1/products?${query}&limit=1`)).map((p) => p.name)
      assert.deepEqual(walked, all, query)
    }
  })

  test('the index follows every write in its transaction: a new name is found, the old one no longer', async () => {
    const product = await createProduct(app, admin, { name: 'Brass lantern' })
    assert.deepEqual(await search('q=lantern'), ['Brass lantern'])
    const res = await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth, payload: { name: 'Copper kettle' } })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(await search('q=lantern'), [])
    assert.deepEqual(await search('q=kettle'), ['Copper kettle'])
    // A change that leaves the name alone keeps it found.
    await app.inject({ method: 'PATCH', url: `/v1/products/${product.id}`, headers: admin.auth, payload: { stock: 3 } })
    assert.deepEqual(await search('q=kettle'), ['Copper kettle'])
  })

  test('query syntax of either database is only text: never an error, never an operator', async () => {
    for (const q of ['notebook"', 'notebook OR garden', 'NEAR(notebook paper)', 'name:notebook', '-notebook', 'notebook^', "note'book", 'notebook\\', '(notebook', 'notebook & paper | !hose', 'notebook:*', 'notebook <-> paper', '{notebook}', 'note* *', '"" notebook']) {
      const res = await app.inject({ method: 'GET', url: `/v1/products?q=${encodeURIComponent(q)}` })
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`)
    }
    // `-` and `|` are no operators: both words must match.
    assert.deepEqual(await search(`q=${encodeURIComponent('-garden hose')}`), ['Garden hose'])
    assert.deepEqual(await search(`q=${encodeURIComponent('garden | notebook')}`), [])
  })

  test('bad q: 400 naming q', async () => {
    for (const q of ['', '   ', '***', '"" ()', '-', 'x'.repeat(201), '\u0000notebook']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/products?q=${encodeURIComponent(q)}` }), 400, 'VALIDATION_ERROR', ['q'])
    }
    // Percent-escapes that are not UTF-8 stay as they were sent: text like any other.
    assert.equal((await app.inject({ method: 'GET', url: '/v1/products?q=%ED%A0%80' })).statusCode, 200)
    assertError(await app.inject({ method: 'GET', url: '/v1/products?q=a&q=b' }), 400, 'VALIDATION_ERROR', ['q'])
    assert.equal((await app.inject({ method: 'GET', url: `/v1/products?q=${'x'.repeat(200)}` })).statusCode, 200)
    // Together with other bad parameters, each named once.
    assertError(await app.inject({ method: 'GET', url: '/v1/products?q=***&minPrice=9&maxPrice=1&sort=up' }), 400, 'VALIDATION_ERROR', ['q', 'minPrice', 'sort'])
  })

  test('a cursor of one search is refused for another', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/products?q=note*&limit=1' })
    const cursor = new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
    assertError(await app.inject({ method: 'GET', url: `/v1/products?q=notebook&cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
    assertError(await app.inject({ method: 'GET', url: `/v1/products?cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
  })
})
