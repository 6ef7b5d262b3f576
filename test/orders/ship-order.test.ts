import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, sendRaw } from '../helper.js'
import { BAD_IDS, createProduct, patchOrder, placeOrder, stockOf } from '../products/fixtures.js'

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const owner = await createUser(app)
const stranger = await createUser(app)
const product = await createProduct(app, admin, { stock: 1000 })

const statusOf = async (id: number) => (await app.inject({ method: 'GET', url: `/v1/orders/${id}`, headers: admin.auth })).json().status

describe('PATCH /v1/orders/{id} {"status": "SHIPPED"}', () => {
  test('an admin ships a PAID order: 200 SHIPPED, stock unchanged', async () => {
    const order = await placeOrder(app, owner, product.id, 2)
    const stock = await stockOf(app, product.id)
    const res = await patchOrder(app, admin, order.id, { status: 'SHIPPED' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual({ ...(res.json() as object), updatedAt: '' }, { ...order, status: 'SHIPPED', updatedAt: '' })
    assert.equal(await stockOf(app, product.id), stock)
  })

  test('the owner (not an admin) cannot ship: 403; anyone else does not see the order: 404', async () => {
    const order = await placeOrder(app, owner, product.id, 1)
    assertError(await patchOrder(app, owner, order.id, { status: 'SHIPPED' }), 403, 'ACCESS_DENIED')
    assertError(await patchOrder(app, stranger, order.id, { status: 'SHIPPED' }), 404, 'ORDER_NOT_FOUND')
    assert.equal(await statusOf(order.id), 'PAID')
  })

  test('only a PAID order ships: a canceled or shipped one is 409 ORDER_CANNOT_SHIP', async () => {
    const canceled = await placeOrder(app, owner, product.id, 1)
    await patchOrder(app, owner, canceled.id, { status: 'CANCELED' })
    assertError(await patchOrder(app, admin, canceled.id, { status: 'SHIPPED' }), 409, 'ORDER_CANNOT_SHIP')
    assert.equal(await statusOf(canceled.id), 'CANCELED')
    const shipped = await placeOrder(app, owner, product.id, 1)
    assert.equal((await patchOrder(app, admin, shipped.id, { status: 'SHIPPED' })).statusCode, 200)
    assertError(await patchOrder(app, admin, shipped.id, { status: 'SHIPPED' }), 409, 'ORDER_CANNOT_SHIP')
  })
})

describe('PATCH /v1/orders/{id}: order of checks 401, 400, 404, 403, 412, 409', () => {
  test('401 before anything', async () => {
    assertError(await patchOrder(app, undefined, 'abc', { status: 'nope' }), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('400 before 404: path and body failures together', async () => {
    assertError(await patchOrder(app, owner, 'abc', { status: 'PAID' }), 400, 'VALIDATION_ERROR', ['id', 'status'])
  })

  test('404 before 403', async () => {
    assertError(await patchOrder(app, stranger, 999999, { status: 'CANCELED' }), 404, 'ORDER_NOT_FOUND')
  })

  test('403 before 412, and 412 before 409', async () => {
    const order = await placeOrder(app, owner, product.id, 1)
    assertError(await patchOrder(app, owner, order.id, { status: 'SHIPPED' }, { 'if-match': '"stale"' }), 403, 'ACCESS_DENIED')
    await patchOrder(app, admin, order.id, { status: 'SHIPPED' })
    assertError(await patchOrder(app, admin, order.id, { status: 'SHIPPED' }, { 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED')
    assertError(await patchOrder(app, owner, order.id, { status: 'CANCELED' }, { 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED')
  })
})

describe('PATCH /v1/orders/{id} field rules', () => {
  const cases: Array<[string, unknown, string[]]> = [
    ['status missing', {}, ['status']],
    ['status PAID (not a move a client can ask for)', { status: 'PAID' }, ['status']],
    ['status in lower case', { status: 'shipped' }, ['status']],
    ['status null', { status: null }, ['status']],
    ['status a number', { status: 1 }, ['status']],
    ['an unknown member', { status: 'CANCELED', reason: 'changed my mind' }, ['reason']]
  ]
  for (const [name, body, fields] of cases) {
    test(`${name}: 400 naming ${fields.join(', ')}`, async () => {
      const order = await placeOrder(app, owner, product.id, 1)
      assertError(await patchOrder(app, owner, order.id, body), 400, 'VALIDATION_ERROR', fields)
      assert.equal(await statusOf(order.id), 'PAID')
    })
  }

  test('the status message names the two moves', async () => {
    const res = await patchOrder(app, owner, 1, { status: 'PAID' })
    assert.equal(res.json().errors[0].message, 'must be one of: CANCELED, SHIPPED')
  })

  test('no body, a body that is not an object, NUL in the status: 400', async () => {
    assertError(await app.inject({ method: 'PATCH', url: '/v1/orders/1', headers: owner.auth }), 400, 'VALIDATION_ERROR', ['status'])
    assertError(await sendRaw(app, 'PATCH', '/v1/orders/1', '["CANCELED"]', owner.auth), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await sendRaw(app, 'PATCH', '/v1/orders/1', '{"status": "CANCELED\\u0000"}', owner.auth), 400, 'VALIDATION_ERROR', ['status'])
  })

  test('a malformed id: 400 naming id', async () => {
    for (const id of BAD_IDS) assertError(await patchOrder(app, owner, id, { status: 'CANCELED' }), 400, 'VALIDATION_ERROR', ['id'])
  })
})
