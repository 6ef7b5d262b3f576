import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import { IMAGE_TYPES } from '../../src/files/image-type.js'
import type { StoredImage } from '../../src/files/image.representation.js'
import { asNumber } from '../../src/http/json-numbers.js'
import { ref } from '../../src/http/schemas.js'
import { sharedSerializers } from '../../src/pipeline/serializers.js'
import { toPost, toPostJson } from '../../src/posts/post.representation.js'
import { PostList } from '../../src/posts/post.schemas.js'
import type { PostWithAuthor } from '../../src/posts/post.table.js'
import { toProduct, toProductJson } from '../../src/products/product.representation.js'
import { CATEGORIES, Product } from '../../src/products/product.schemas.js'
import type { ProductRow } from '../../src/products/product.table.js'
import { componentSchemas } from '../../src/service/components.js'

// A post or a product read by id, and a page of either list, on the fast path is written by
// JSON.stringify from the representations built for it (toPostJson, toProductJson); Fastify's
// path writes the same answer with the schema's serializer from the representations every other
// answer shows. The two texts must be the same, byte for byte, for any row the database can hold.

const named = Object.fromEntries(componentSchemas.map((schema) => [schema.$id!, JSON.parse(JSON.stringify(schema))]))
const compile = sharedSerializers(named)
const BASE = 'https://api.example.com'

const id = fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) })
// Any text: lone surrogates, control characters, quotes, backslashes, U+2028, long runs.
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u2028', '\ud800', '\udfff', '😀', 'é', 'a'), maxLength: 80 }),
  fc.string({ unit: 'grapheme', minLength: 40, maxLength: 300 })
)
// What SQLite hands back (the canonical text) and what PostgreSQL does (a Date).
const instant = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
const timestamp = fc.oneof(instant.map((d) => d.toISOString()), instant)
const storedImage: fc.Arbitrary<StoredImage> = fc.record({
  id: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  contentType: fc.constantFrom(...IMAGE_TYPES),
  size: fc.integer({ min: 1, max: 10_000_000 }),
  width: fc.integer({ min: 1, max: 20_000 }),
  height: fc.integer({ min: 1, max: 20_000 }),
  sha256: fc.stringMatching(/^[0-9a-f]{64}$/),
  createdAt: fc.date({ noInvalidDate: true, min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z') }).map((d) => d.toISOString())
})
const images = fc.oneof(fc.constant('[]'), fc.array(storedImage, { minLength: 1, maxLength: 3 }).map((list) => JSON.stringify(list)))

const postRow: fc.Arbitrary<PostWithAuthor> = fc.record({
  id,
  author_id: id,
  title: text,
  content: text,
  views: fc.bigInt({ min: 0n, max: BigInt(Number.MAX_SAFE_INTEGER) }),
  created_at: timestamp,
  updated_at: timestamp,
  images,
  author_name: text
})
const productRow: fc.Arbitrary<ProductRow> = fc.record({
  id,
  name: text,
  price: fc.bigInt({ min: 0n, max: 100_000_000n }),
  category: fc.constantFrom(...CATEGORIES),
  stock: fc.bigInt({ min: 0n, max: 1_000_000_000n }),
  on_sale: fc.constantFrom(0n, 1n),
  created_at: timestamp,
  updated_at: timestamp,
  images
})

describe('representations written by JSON.stringify', () => {
  test('a post and a product: the text their schema\'s serializer writes', () => {
    const post = compile({ schema: { $ref: 'Post' } })
    const product = compile({ schema: { $ref: 'Product' } })
    fc.assert(fc.property(postRow, productRow, (postAt, productAt) => {
      assert.equal(JSON.stringify(toPostJson(postAt, BASE)), post(toPost(postAt, BASE)))
      assert.equal(JSON.stringify(toProductJson(productAt, BASE)), product(toProduct(productAt, BASE)))
    }), { numRuns: 300 })
  })

  test('a page of posts: the text the list\'s serializer writes', () => {
    const serialize = compile({ schema: PostList })
    fc.assert(fc.property(fc.array(postRow, { maxLength: 5 }), (rows) => {
      assert.equal(JSON.stringify(rows.map((row) => toPostJson(row, BASE))), serialize(rows.map((row) => toPost(row, BASE))))
    }), { numRuns: 300 })
  })

  test('a page of products: the text the list\'s serializer writes', () => {
    const serialize = compile({ schema: Type.Array(ref(Product)) })
    fc.assert(fc.property(fc.array(productRow, { maxLength: 5 }), (rows) => {
      assert.equal(JSON.stringify(rows.map((row) => toProductJson(row, BASE))), serialize(rows.map((row) => toProduct(row, BASE))))
    }), { numRuns: 300 })
  })

  test('an integer a JSON number cannot hold exactly is refused, not rounded', () => {
    assert.equal(asNumber(9007199254740991n), 9007199254740991)
    assert.equal(asNumber(-9007199254740991n), -9007199254740991)
    assert.equal(asNumber(0n), 0)
    for (const beyond of [9007199254740992n, 9007199254740993n, 9223372036854775807n, -9007199254740992n]) {
      assert.throws(() => asNumber(beyond), RangeError, String(beyond))
    }
    const row = fc.sample(postRow, 1)[0]!
    assert.throws(() => toPostJson({ ...row, views: 9007199254740993n }, BASE), RangeError)
  })
})
