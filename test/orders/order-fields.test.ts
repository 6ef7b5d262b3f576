import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, sendRaw } from '../helper.js'
import { createProduct, postOrder, stockOf } from '../products/fixtures.js'

// Every field rule of POST /v1/orders (docs/api.md), with the exact failed fields.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)
const product = await createProduct(app, admin, { stock: 100 })
const valid = (fields: Record<string, unknown> = {}) => ({ productId: product.id, quantity: 1, ...fields })

const cases: Array<[string, unknown, string[]]> = [
  ['productId missing', { quantity: 1 }, ['productId']],
  ['productId 0', valid({ productId: 0 }), ['productId']],
  ['productId negative', valid({ productId: -1 }), ['productId']],
  ['productId a string', valid({ productId: String(product.id) }), ['productId']],
  ['productId a fraction', valid({ productId: 1.5 }), ['productId']],
  ['productId null', valid({ productId: null }), ['productId']],
  ['productId 2^53, beyond exact JSON numbers', valid({ productId: 2 ** 53 }), ['productId']],
  ['quantity missing', { productId: product.id }, ['quantity']],
  ['quantity 0', valid({ quantity: 0 }), ['quantity']],
  ['quantity negative', valid({ quantity: -2 }), ['quantity']],
  ['quantity 1001', valid({ quantity: 1001 }), ['quantity']],
  ['quantity a string', valid({ quantity: '2' }), ['quantity']],
  ['quantity a fraction', valid({ quantity: 1.5 }), ['quantity']],
  ['quantity null', valid({ quantity: null }), ['quantity']],
  ['quantity a boolean', valid({ quantity: true }), ['quantity']],
  ['an unknown member (role)', valid({ role: 'ADMIN' }), ['role']],
  ['an unknown member (price)', valid({ price: 1 }), ['price']],
  ['every field at once', { productId: 'x', quantity: 0, discount: 5 }, ['productId', 'quantity', 'discount']],
  ['an empty object', {}, ['productId', 'quantity']]
]

describe('POST /v1/orders field rules', () => {
  for (const [name, body, fields] of cases) {
    test(`${name}: 400 VALIDATION_ERROR naming ${fields.join(', ')}`, async () => {
      assertError(await postOrder(app, user, body), 400, 'VALIDATION_ERROR', fields)
    })
  }

  test('the limits themselves are accepted', async () => {
    assert.equal((await postOrder(app, user, valid({ quantity: 1 }))).statusCode, 201)
    const big = await createProduct(app, admin, { stock: 1000 })
    assert.equal((await postOrder(app, user, { productId: big.id, quantity: 1000 })).statusCode, 201)
  })

  test('a 64-bit id written as a JSON number beyond 2^53 is refused, never rounded to another product', async () => {
    for (const id of ['9223372036854775807', '9223372036854775808', '9007199254740993', '1e400', '123456789012345678901234567890']) {
      const res = await sendRaw(app, 'POST', '/v1/orders', `{"productId": ${id}, "quantity": 1}`, user.auth)
      assertError(res, 400, 'VALIDATION_ERROR', ['productId'])
      // 1e400 is beyond any double: its text is judged out of range before the id rule applies.
      assert.equal(res.json().errors[0].message, id === '1e400' ? 'is out of range' : 'must be an integer id from 1 to 9007199254740991')
    }
  })

  test('no body at all names both required fields', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth }), 400, 'VALIDATION_ERROR', ['productId', 'quantity'])
  })

  test('a body that is not an object, malformed JSON, not JSON: 400/400/415', async () => {
    for (const text of ['[]', '"x"', '7', 'null']) {
      assertError(await sendRaw(app, 'POST', '/v1/orders', text, user.auth), 400, 'VALIDATION_ERROR', ['body'])
    }
    assertError(await sendRaw(app, 'POST', '/v1/orders', '{"productId": 1,', user.auth), 400, 'MALFORMED_JSON')
    const res = await app.inject({ method: 'POST', url: '/v1/orders', headers: { ...user.auth, 'content-type': 'text/plain' }, payload: 'productId=1' })
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('order of checks: 400 comes before 404 and 409; a refused request changes nothing', async () => {
    const stock = await stockOf(app, product.id)
    assertError(await postOrder(app, user, { productId: 999999, quantity: 0 }), 400, 'VALIDATION_ERROR', ['quantity'])
    assertError(await postOrder(app, user, { productId: product.id, quantity: 1, status: 'PAID', role: 'ADMIN' }), 400, 'VALIDATION_ERROR', ['role'])
    assert.equal(await stockOf(app, product.id), stock)
  })
})
