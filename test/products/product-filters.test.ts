import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { createProduct, type ProductJson } from './fixtures.js'

// GET /v1/products with filters and sort: each filter and sort against the same rule applied in
// memory to the products made here, the Link that keeps them, and the cursor bound to them.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

const made: ProductJson[] = []
const specs = [
  { name: 'Zebra notebook', price: 1500, category: 'BOOK', stock: 10, onSale: true },
  { name: 'apple crate', price: 900, category: 'FOOD', stock: 0, onSale: true },
  { name: 'Atlas', price: 2500, category: 'BOOK', stock: 3, onSale: false },
  { name: 'Étagère', price: 9900, category: 'HOME', stock: 1, onSale: true },
  { name: 'Bread', price: 900, category: 'FOOD', stock: 50, onSale: true },
  { name: 'Cable', price: 1200, category: 'ELECTRONICS', stock: 0, onSale: false },
  { name: 'Atlas', price: 1900, category: 'BOOK', stock: 7, onSale: true }
]
for (const spec of specs) made.push(await createProduct(app, admin, spec))

const walk = async (query: string, limit = 2) => await walkPages<ProductJson>(app, `/v1/products?${query}${query === '' ? '' : '&'}limit=${limit}`)

const ids = (products: ProductJson[]) => products.map((p) => p.id)
// Code point order, as the service documents for `name`.
const byCodePoint = (a: string, b: string) => {
  const x = [...a].map((c) => c.codePointAt(0)!)
  const y = [...b].map((c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return x.length - y.length
}
const newestFirst = (a: ProductJson, b: ProductJson) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id

describe('GET /v1/products filters', () => {
  test('each filter, alone and together, over every page', async () => {
    const cases: Array<[string, (p: ProductJson) => boolean]> = [
      ['category=BOOK', (p) => p.category === 'BOOK'],
      ['category=BOOK&category=FOOD', (p) => ['BOOK', 'FOOD'].includes(p.category)],
      ['category=FOOD&category=FOOD', (p) => p.category === 'FOOD'],
      ['onSale=true', (p) => p.onSale],
      ['onSale=false', (p) => !p.onSale],
      ['inStock=true', (p) => p.stock > 0],
      ['inStock=false', (p) => p.stock === 0],
      ['minPrice=1200', (p) => p.price >= 1200],
      ['maxPrice=1200', (p) => p.price <= 1200],
      ['minPrice=900&maxPrice=900', (p) => p.price === 900],
      ['category=BOOK&onSale=true&inStock=true&maxPrice=2000', (p) => p.category === 'BOOK' && p.onSale && p.stock > 0 && p.price <= 2000],
      ['category=SPORTS', () => false]
    ]
    for (const [query, keep] of cases) {
      assert.deepEqual(ids(await walk(query)), ids(made.filter(keep).sort(newestFirst)), query)
    }
  })

  test('each sort, ties broken by id in the same direction', async () => {
    const cases: Array<[string, (a: ProductJson, b: ProductJson) => number]> = [
      ['', newestFirst],
      ['sort=-createdAt', newestFirst],
      ['sort=createdAt', (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id],
      ['sort=price', (a, b) => a.price - b.price || a.id - b.id],
      ['sort=-price', (a, b) => b.price - a.price || b.id - a.id],
      ['sort=name', (a, b) => byCodePoint(a.name, b.name) || a.id - b.id]
    ]
    for (const [query, compare] of cases) {
      for (const limit of [1, 3, 100]) {
        assert.deepEqual(ids(await walk(query, limit)), ids([...made].sort(compare)), `${query} limit ${limit}`)
      }
    }
  })

  test('filters and sort together; the Link keeps both', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/products?category=FOOD&category=BOOK&sort=-price&limit=2' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(ids(res.json()), ids(made.filter((p) => p.category !== 'HOME' && p.category !== 'ELECTRONICS').sort((a, b) => b.price - a.price || b.id - a.id).slice(0, 2)))
    assert.match(String(res.headers.link), /^<\/v1\/products\?category=FOOD&category=BOOK&sort=-price&limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
  })
})

describe('GET /v1/products cursors are bound to their sort and filters', () => {
  async function cursorOf (query: string): Promise<string> {
    const res = await app.inject({ method: 'GET', url: `/v1/products?${query}&limit=1` })
    return new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
  }

  test('another sort or other filters: 400 CURSOR_MISMATCH', async () => {
    const cursor = await cursorOf('sort=price&category=BOOK')
    for (const query of ['sort=name&category=BOOK', 'category=BOOK', 'sort=price', 'sort=price&category=BOOK&category=FOOD', 'sort=price&category=BOOK&onSale=true']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/products?${query}&cursor=${cursor}` }), 400, 'CURSOR_MISMATCH')
    }
  })

  test('the same list with another limit, or its filters in another order, goes on', async () => {
    const cursor = await cursorOf('category=BOOK&category=FOOD&sort=price')
    for (const query of ['category=FOOD&category=BOOK&sort=price&limit=5', 'sort=price&category=BOOK&category=FOOD']) {
      const res = await app.inject({ method: 'GET', url: `/v1/products?${query}&cursor=${cursor}` })
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
    }
  })

  test('the default sort named or not is the same list', async () => {
    const cursor = await cursorOf('inStock=true')
    const res = await app.inject({ method: 'GET', url: `/v1/products?inStock=true&sort=-createdAt&cursor=${cursor}` })
    assert.equal(res.statusCode, 200, res.body)
  })

  test('a cursor of another kind, or with a key that is not one for its sort: 400 naming cursor', async () => {
    const fingerprint = JSON.parse(Buffer.from(await cursorOf('sort=price'), 'base64url').toString().slice(3))[0] as string
    const forged = (key: unknown, id: unknown = '1') => Buffer.from(`v2:${JSON.stringify([fingerprint, key, id])}`).toString('base64url')
    for (const cursor of [Buffer.from('v1:5').toString('base64url'), forged('cheap'), forged('0'), forged('1e3'), forged(5), forged('5', '0'), forged('5', 5), 'v2:', Buffer.from('v2:[').toString('base64url')]) {
      assertError(await app.inject({ method: 'GET', url: `/v1/products?sort=price&cursor=${cursor}` }), 400, 'VALIDATION_ERROR', ['cursor'])
    }
  })
})

describe('GET /v1/products bad parameters', () => {
  const bad = async (query: string, fields: string[]) => {
    assertError(await app.inject({ method: 'GET', url: `/v1/products?${query}` }), 400, 'VALIDATION_ERROR', fields)
  }

  test('each parameter on its own', async () => {
    await bad('sort=cheapest', ['sort'])
    await bad('sort=', ['sort'])
    await bad('sort=price&sort=name', ['sort'])
    await bad('sort=views', ['sort'])
    await bad('category=BOOKS', ['category'])
    await bad('category=book', ['category'])
    await bad('category=', ['category'])
    await bad('category=BOOK&category=NOPE', ['category'])
    await bad('onSale=yes', ['onSale'])
    await bad('onSale=1', ['onSale'])
    await bad('onSale=true&onSale=true', ['onSale'])
    await bad('inStock=', ['inStock'])
    await bad('minPrice=0', ['minPrice'])
    await bad('minPrice=1.5', ['minPrice'])
    await bad('minPrice=1000000001', ['minPrice'])
    await bad('maxPrice=abc', ['maxPrice'])
    await bad('maxPrice=-5', ['maxPrice'])
    await bad('minPrice=5&minPrice=6', ['minPrice'])
    await bad('minPrice=2000&maxPrice=1000', ['minPrice'])
    await bad('price=5', ['price'])
    await bad('limit=5&limit=6', ['limit'])
  })

  test('all at once, one entry per parameter', async () => {
    await bad('sort=x&category=X&category=Y&onSale=no&inStock=1&minPrice=0&maxPrice=x&limit=0&cursor=%21&q2=1', ['sort', 'category', 'onSale', 'inStock', 'minPrice', 'maxPrice', 'limit', 'cursor', 'q2'])
    // Between two bad bounds, only their own rules are reported.
    await bad('minPrice=0&maxPrice=0', ['minPrice', 'maxPrice'])
    // A bound that failed its own rule is not compared with the other.
    await bad('minPrice=500&maxPrice=0', ['maxPrice'])
    await bad('minPrice=512&maxPrice=-999', ['maxPrice'])
    await bad('minPrice=2000&maxPrice=1000&maxPrice=3000', ['maxPrice'])
  })

  test('equal bounds are a range of one price', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/products?minPrice=2500&maxPrice=2500' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json().map((p: ProductJson) => p.name), ['Atlas'])
  })
})
