import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { nextPageLink, nextPageUrl } from '../../src/http/paging.js'
import { listQuery, nextListLink } from '../../src/pipeline/fast-reads.js'

// The next page's link keeps the request's path and query and sets `cursor`, exactly as the URL
// parser and URLSearchParams write them; plain URLs take a shorter way that must not differ.

const reference = (url: string, cursor: string): string => {
  const parsed = new URL(url, 'http://placeholder')
  parsed.searchParams.set('cursor', cursor)
  return `${parsed.pathname}${parsed.search}`
}

test('the ordinary cases', () => {
  assert.equal(nextPageUrl('/v1/posts', 'abc'), '/v1/posts?cursor=abc')
  assert.equal(nextPageUrl('/v1/posts?limit=20', 'abc'), '/v1/posts?limit=20&cursor=abc')
  assert.equal(nextPageUrl('/v1/posts?cursor=old&limit=20', 'new'), '/v1/posts?cursor=new&limit=20')
  assert.equal(nextPageUrl('/v1/posts?q=caf%C3%A9+au+lait&limit=2', 'c'), '/v1/posts?q=caf%C3%A9+au+lait&limit=2&cursor=c')
  assert.equal(nextPageUrl('/v1/products?category=BOOK&category=FOOD', 'c'), '/v1/products?category=BOOK&category=FOOD&cursor=c')
  assert.equal(nextPageUrl('/v1/posts?cursor=a&limit=2&cursor=b', 'new'), '/v1/posts?cursor=new&limit=2')
  assert.equal(nextPageUrl('/v1/posts?', 'abc'), '/v1/posts?cursor=abc')
})

test('any URL: the same link as through the URL object', () => {
  const chars = fc.constantFrom(...'abcXYZ019-_.~%=&+*,;:@!$()/?#[]{}<>"\' \\|^`é🙂\t'.split(''), ...['%20', '%2F', '%3D', '%26', '%C3%A9', '%zz', 'cursor=', 'limit=', 'cursor'])
  const text = fc.array(chars, { maxLength: 24 }).map((parts) => parts.join(''))
  const path = fc.oneof(fc.constant('/v1/posts'), fc.constant('/v1/users/12/orders'), text.map((t) => `/${t}`))
  const url = fc.tuple(path, fc.option(text, { nil: undefined })).map(([p, q]) => q === undefined ? p : `${p}?${q}`)
  const outcome = (make: () => string): string => {
    try {
      return make()
    } catch (error) {
      return `throws ${(error as Error).name}`
    }
  }
  fc.assert(fc.property(url, fc.oneof(fc.stringMatching(/^[\w-]{1,40}$/), fc.string({ maxLength: 8 })), (u, cursor) => {
    assert.equal(outcome(() => nextPageUrl(u, cursor)), outcome(() => reference(u, cursor)))
  }), { numRuns: 3000 })
})

test('a query of plain pairs, edited as text: the same link as through the URL object', () => {
  const name = fc.constantFrom('cursor', 'limit', 'sort', 'a_b', 'x.y', 'c*')
  const value = fc.stringMatching(/^[\w.*-]{0,6}$/)
  const query = fc.array(fc.tuple(name, value), { maxLength: 5 }).map((pairs) => pairs.map(([n, v]) => `${n}=${v}`).join('&'))
  fc.assert(fc.property(fc.constantFrom('/v1/posts', '/v1/users/12/orders'), query, fc.stringMatching(/^[\w-]{1,40}$/), (path, q, cursor) => {
    const url = q === '' ? path : `${path}?${q}`
    assert.equal(nextPageUrl(url, cursor), reference(url, cursor))
  }), { numRuns: 2000 })
})

test('a list URL the fast reads take, edited where it stands: the same Link as nextPageLink writes', () => {
  // Mostly pairs the fast reads take, and a few they refuse (which the property then skips).
  const limit = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 100 }).map(String), weight: 6 }, fc.constantFrom('0', '101', '07', ''))
  const cursor = fc.oneof({ arbitrary: fc.stringMatching(/^[\w-]{1,12}$/), weight: 6 }, fc.constantFrom('', 'a.b'))
  const pair = fc.oneof({ arbitrary: limit.map((v) => `limit=${v}`), weight: 4 }, { arbitrary: cursor.map((v) => `cursor=${v}`), weight: 4 }, fc.constantFrom('sort=title', 'cursor', ''))
  const url = fc.tuple(fc.constantFrom('/v1/posts', '/v1/products'), fc.array(pair, { maxLength: 3 }), fc.boolean())
    .map(([path, pairs, mark]) => pairs.length === 0 ? (mark ? `${path}?` : path) : `${path}?${pairs.join('&')}`)
  let taken = 0
  fc.assert(fc.property(url, fc.oneof(fc.stringMatching(/^[\w-]{1,40}$/), fc.string({ maxLength: 8 })), (u, next) => {
    const path = u.startsWith('/v1/posts') ? '/v1/posts' : '/v1/products'
    const query = listQuery(u, path)
    if (query === undefined) return
    taken++
    assert.equal(nextListLink(u, path.length, query, next), nextPageLink(u, next))
  }), { numRuns: 3000 })
  // Most of the URLs drawn are ones the fast reads take (else this test would hold nothing).
  assert.ok(taken > 1000, `${taken} URLs taken`)
})
