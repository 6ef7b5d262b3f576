import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin } from '../helper.js'
import { createProduct, type ProductJson } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const created: ProductJson[] = []
for (let i = 1; i <= 7; i++) created.push(await createProduct(app, admin, { name: `Product ${i}` }))

const get = (url: string) => app.inject({ method: 'GET', url })

function nextLink (link: unknown): string | undefined {
  if (link === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link))
  assert.ok(match, `Link header: ${String(link)}`)
  return match[1]
}

describe('GET /v1/products', () => {
  test('public, a JSON array, newest first', async () => {
    const res = await get('/v1/products')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), [...created].reverse())
    assert.equal(res.headers.link, undefined)
  })

  test('pages follow Link rel="next" to the end without gaps or repeats', async () => {
    const seen: number[] = []
    let url: string | undefined = '/v1/products?limit=3'
    let pages = 0
    while (url !== undefined) {
      const res = await get(url)
      assert.equal(res.statusCode, 200)
      const page = res.json() as ProductJson[]
      assert.ok(page.length <= 3)
      seen.push(...page.map((p) => p.id))
      url = nextLink(res.headers.link)
      if (url !== undefined) assert.match(url, /^\/v1\/products\?limit=3&cursor=/)
      pages += 1
    }
    assert.equal(pages, 3)
    assert.deepEqual(seen, created.map((p) => p.id).reverse())
  })

  test('a page that ends exactly at the last item has no Link', async () => {
    const res = await get('/v1/products?limit=7')
    assert.equal(res.json().length, 7)
    assert.equal(res.headers.link, undefined)
  })

  test('limit out of range or not an integer: 400 naming limit', async () => {
    for (const limit of ['0', '101', 'abc', '1.5', '-1', '']) {
      assertError(await get(`/v1/products?limit=${limit}`), 400, 'VALIDATION_ERROR', ['limit'])
    }
  })

  test('a cursor the service did not issue: 400 naming cursor, together with a bad limit', async () => {
    assertError(await get('/v1/products?cursor=garbage!'), 400, 'VALIDATION_ERROR', ['cursor'])
    assertError(await get(`/v1/products?cursor=${Buffer.from('v1:0').toString('base64url')}`), 400, 'VALIDATION_ERROR', ['cursor'])
    assertError(await get('/v1/products?cursor=abc&limit=0'), 400, 'VALIDATION_ERROR', ['cursor', 'limit'])
  })
})
