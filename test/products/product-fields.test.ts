import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, sendRaw } from '../helper.js'
import { validProduct } from './fixtures.js'

// Every field rule of POST /v1/products (docs/api.md), with the exact failed fields.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: payload as object })
const without = (member: string) => { const body = validProduct(); delete body[member]; return body }

const cases: Array<[string, unknown, string[]]> = [
  ['name missing', without('name'), ['name']],
  ['name not a string', validProduct({ name: 5 }), ['name']],
  ['name null', validProduct({ name: null }), ['name']],
  ['name empty', validProduct({ name: '' }), ['name']],
  ['name blank', validProduct({ name: ' \t\n ' }), ['name']],
  ['name of 101 characters', validProduct({ name: 'x'.repeat(101) }), ['name']],
  ['name of 101 emoji', validProduct({ name: '\u{1F600}'.repeat(101) }), ['name']],
  ['price missing', without('price'), ['price']],
  ['price a fraction', validProduct({ price: 1.5 }), ['price']],
  ['price a numeric string', validProduct({ price: '10' }), ['price']],
  ['price 0', validProduct({ price: 0 }), ['price']],
  ['price negative', validProduct({ price: -5 }), ['price']],
  ['price above 1,000,000,000', validProduct({ price: 1_000_000_001 }), ['price']],
  ['price null', validProduct({ price: null }), ['price']],
  ['price a boolean', validProduct({ price: true }), ['price']],
  ['category missing', without('category'), ['category']],
  ['category not a member', validProduct({ category: 'TOYS' }), ['category']],
  ['category in lower case', validProduct({ category: 'book' }), ['category']],
  ['category a number', validProduct({ category: 1 }), ['category']],
  ['stock negative', validProduct({ stock: -1 }), ['stock']],
  ['stock above 1,000,000', validProduct({ stock: 1_000_001 }), ['stock']],
  ['stock a string', validProduct({ stock: '3' }), ['stock']],
  ['stock a fraction', validProduct({ stock: 2.5 }), ['stock']],
  ['stock null', validProduct({ stock: null }), ['stock']],
  ['onSale a string', validProduct({ onSale: 'true' }), ['onSale']],
  ['onSale a number', validProduct({ onSale: 1 }), ['onSale']],
  ['onSale null', validProduct({ onSale: null }), ['onSale']],
  ['an unknown member', validProduct({ color: 'red' }), ['color']],
  ['a nested unknown member', validProduct({ meta: { a: 1 } }), ['meta']],
  ['every field at once', { name: '', price: 1.5, category: 'X', stock: -1, onSale: 'no', extra: 1 }, ['name', 'price', 'category', 'stock', 'onSale', 'extra']]
]

describe('POST /v1/products field rules', () => {
  for (const [name, body, fields] of cases) {
    test(`${name}: 400 VALIDATION_ERROR naming ${fields.join(', ')}`, async () => {
      assertError(await post(body), 400, 'VALIDATION_ERROR', fields)
    })
  }

  test('the category message lists the six members', async () => {
    const res = await post(validProduct({ category: 'TOYS' }))
    assert.equal(res.json().errors[0].message, 'must be one of: BOOK, CLOTHING, ELECTRONICS, FOOD, HOME, SPORTS')
  })

  test('no body at all names every required field', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth }), 400, 'VALIDATION_ERROR', ['name', 'price', 'category'])
  })

  test('a body that is not an object: 400', async () => {
    for (const text of ['[]', '"name"', '42', 'null', 'true']) {
      assertError(await sendRaw(app, 'POST', '/v1/products', text, admin.auth), 400, 'VALIDATION_ERROR', ['body'])
    }
  })

  test('NUL and an unpaired surrogate in the name: 400 naming name', async () => {
    for (const name of ['"Bo\\u0000ok"', '"Bo\\ud800ok"', '"\\udc00"']) {
      const text = `{"name": ${name}, "price": 10, "category": "BOOK"}`
      assertError(await sendRaw(app, 'POST', '/v1/products', text, admin.auth), 400, 'VALIDATION_ERROR', ['name'])
    }
  })

  test('a huge number or malformed JSON is a 400, never a 500', async () => {
    assertError(await sendRaw(app, 'POST', '/v1/products', '{"name": "a", "price": 1e400, "category": "BOOK"}', admin.auth), 400, 'VALIDATION_ERROR', ['price'])
    assertError(await sendRaw(app, 'POST', '/v1/products', '{"name": "a", "price": 123456789012345678901234567890, "category": "BOOK"}', admin.auth), 400, 'VALIDATION_ERROR', ['price'])
    assertError(await sendRaw(app, 'POST', '/v1/products', '{"name": "a",', admin.auth), 400, 'MALFORMED_JSON')
  })

  test('a body that is not JSON: 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/products', headers: { ...admin.auth, 'content-type': 'text/plain' }, payload: 'name=a' })
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })
})
