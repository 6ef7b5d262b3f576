import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { MAX_FIELD_ERRORS } from '../../src/pipeline/validation.js'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'

// What one anonymous client could make the server spend on one body: at most 1,000 members and
// elements in all (judged before JSON.parse), and at most 50 entries in errors[]. Integers are
// judged on their JSON text, not on the double JSON.parse reads.

const { app, close } = await buildTestApp()
after(close)
const json = { 'content-type': 'application/json' }
const signUp = (payload: string) => app.inject({ method: 'POST', url: '/v1/users', headers: json, payload })
const admin = await createAdmin(app)
const user = await createUser(app)
const product = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: { name: 'Lamp', price: 10, category: 'HOME', stock: 5 } })
assert.equal(product.statusCode, 201, product.body)
const productId = product.json().id
const order = (body: string) => app.inject({ method: 'POST', url: '/v1/orders', headers: { ...user.auth, ...json }, payload: body })

const members = (n: number) => Array.from({ length: n }, (_, i) => `"m${i}":1`).join(',')

describe('members and elements in all', () => {
  test('80,000 unknown members: one small 400 on the field body, not 80,000 entries', async () => {
    const res = await signUp(`{${members(80_000)}}`)
    assertError(res, 400, 'VALIDATION_ERROR', ['body'])
    assert.equal(res.json().errors[0].message, 'must hold at most 1000 members and elements in all')
    assert.ok(res.body.length < 1000, `${res.body.length} bytes`)
  })

  test('1,000 values in all are read; 1,001 are not, nested or not', async () => {
    // 997 unknown members + 3 known = 1,000: every unknown one is a failed field.
    const res = await signUp(`{"email":"a@example.com","password":"long enough","name":"A",${members(997)}}`)
    assertError(res, 400, 'VALIDATION_ERROR')
    assert.equal(res.json().errors.length, MAX_FIELD_ERRORS)
    const nested = `{"email":"a@example.com","password":"long enough","name":"A","list":[${Array(997).fill(0).join(',')}]}`
    assertError(await signUp(nested), 400, 'VALIDATION_ERROR', ['body'])
  })
})

describe('errors[] is capped at 50', () => {
  test('the first 50 failed fields are listed and the message says how many failed', async () => {
    const res = await signUp(`{${members(120)}}`)
    assertError(res, 400, 'VALIDATION_ERROR')
    const body = res.json()
    assert.equal(body.errors.length, 50)
    // 120 unknown members and 3 missing required fields.
    assert.equal(body.message, 'The request has 123 invalid fields; the first 50 are listed.')
    assert.equal(new Set(body.errors.map((e: { field: string }) => e.field)).size, 50)
  })

  test('up to 50 failed fields: all listed, the usual message', async () => {
    const res = await signUp(`{${members(47)}}`)
    assertError(res, 400, 'VALIDATION_ERROR')
    assert.equal(res.json().errors.length, 50)
    assert.equal(res.json().message, 'The request has invalid fields.')
  })
})

describe('integers judged on their JSON text', () => {
  test('a fraction too small for a double is not an integer (it used to read as 1)', async () => {
    const res = await order(`{"productId":${productId},"quantity":1.0000000000000000000001}`)
    assertError(res, 400, 'VALIDATION_ERROR', ['quantity'])
    assert.match(res.json().errors[0].message, /must be an integer/)
    assertError(await order(`{"productId":${productId}.0000000000000000001,"quantity":1}`), 400, 'VALIDATION_ERROR', ['productId'])
    const stock = (await app.inject({ method: 'GET', url: `/v1/products/${productId}` })).json().stock
    assert.equal(stock, 5, 'nothing was ordered')
  })

  test('beyond the double range is out of range, on its field', async () => {
    const res = await order(`{"productId":${productId},"quantity":1e400}`)
    assertError(res, 400, 'VALIDATION_ERROR', ['quantity'])
    assert.equal(res.json().errors[0].message, 'is out of range')
    assertError(await order(`{"productId":${productId},"quantity":-1e400}`), 400, 'VALIDATION_ERROR', ['quantity'])
  })

  test('whole numbers written with a fraction or exponent are integers', async () => {
    const res = await order(`{"productId":${productId},"quantity":1.0}`)
    assert.equal(res.statusCode, 201, res.body)
    const exp = await order(`{"productId":${productId},"quantity":0.2e1}`)
    assert.equal(exp.statusCode, 201, exp.body)
    assert.equal(exp.json().quantity, 2)
    assertError(await order(`{"productId":${productId},"quantity":1.5}`), 400, 'VALIDATION_ERROR', ['quantity'])
  })

  test('in a product: price and stock', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/products', headers: { ...admin.auth, ...json }, payload: '{"name":"Lamp","price":10.00000000000000000001,"category":"HOME","stock":1e999}' })
    assertError(res, 400, 'VALIDATION_ERROR', ['price', 'stock'])
  })
})
