import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { nextPageUrl } from '../../src/http/paging.js'

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
