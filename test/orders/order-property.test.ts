import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, createAdmin, createUser } from '../helper.js'
import { createProduct } from '../products/fixtures.js'

// Property: whatever a client sends to POST /v1/orders and PATCH /v1/orders/{id} (any JSON
// values, any Idempotency-Key), the answer is never a 500, and a 400 names exactly the members
// the documented field rules refuse.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)
const onSale = await createProduct(app, admin, { stock: 1_000_000 })
const offSale = await createProduct(app, admin, { stock: 10, onSale: false })

const isInt = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
const READ_ONLY = ['id', 'userId', 'totalPrice', 'status', 'createdAt', 'updatedAt']
function expectedFailures (body: Record<string, unknown>): string[] {
  const failed: string[] = []
  if (!isInt(body.productId, 1, Number.MAX_SAFE_INTEGER)) failed.push('productId')
  if (!isInt(body.quantity, 1, 1000)) failed.push('quantity')
  for (const key of Object.keys(body)) if (!['productId', 'quantity', ...READ_ONLY].includes(key)) failed.push(key)
  return failed.sort()
}

// The documented key rule: 1 to 255 printable ASCII characters, no space at either end.
const KEY_RULE = /^[\x21-\x7E]([\x20-\x7E]{0,253}[\x21-\x7E])?$/

const compact = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined))
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.double(), fc.constantFrom(2 ** 53, 1e300, -0))
const absentOr = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 8 })
const member = <T>(plausible: fc.Arbitrary<T>) => fc.oneof({ arbitrary: plausible, weight: 3 }, { arbitrary: anyValue, weight: 1 })

describe('orders property', () => {
  test('POST /v1/orders: never 500; 400 exactly per the field rules, else 201/404/409 as the products dictate', async () => {
    const outcomes = new Set<number>()
    await fc.assert(fc.asyncProperty(
      fc.record({
        productId: absentOr(member(fc.constantFrom(onSale.id, offSale.id, 999999, 0, -1))),
        quantity: absentOr(member(fc.integer({ min: -1, max: 1002 }))),
        status: absentOr(anyValue),
        role: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: fc.constant('ADMIN'), weight: 1 })
      }),
      fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 4 },
        { arbitrary: fc.string({ unit: fc.constantFrom('a', 'Z', '-', '~'), minLength: 1, maxLength: 3 }), weight: 4 },
        { arbitrary: fc.string({ unit: fc.constantFrom('a', ' ', '\t'), maxLength: 3 }), weight: 1 }
      ),
      async (record, key) => {
        const body = JSON.parse(JSON.stringify(compact(record))) as Record<string, unknown>
        const headers: Record<string, string> = { ...user.auth, ...(key === undefined ? {} : { 'idempotency-key': key }) }
        const res = await app.inject({ method: 'POST', url: '/v1/orders', headers, payload: body })
        assert.ok(res.statusCode < 500, `500 for ${JSON.stringify(body)}: ${res.body}`)
        outcomes.add(res.statusCode)
        // The key is validated with the body: a malformed one is one more failed field.
        const keyFails = key !== undefined && !KEY_RULE.test(key)
        const expected = [...expectedFailures(body), ...(keyFails ? ['Idempotency-Key'] : [])].sort()
        if (expected.length > 0) {
          assert.equal(res.statusCode, 400, res.body)
          assert.equal(res.json().code, 'VALIDATION_ERROR')
          assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field).sort(), expected)
        } else if (res.statusCode !== 201) {
          const code = res.json().code
          // Any valid id but the two products' names no product (999999, or an integer the
          // arbitrary values produced), so it is a 404.
          const allowed = body.productId === onSale.id ? [] : body.productId === offSale.id ? ['PRODUCT_NOT_ON_SALE'] : ['PRODUCT_NOT_FOUND']
          assert.ok([...allowed, 'IDEMPOTENCY_KEY_REUSED'].includes(code), `${JSON.stringify(body)} → ${res.body}`)
        }
      }
    ), { numRuns: 300 })
    assert.ok(outcomes.has(201) && outcomes.has(400) && outcomes.has(404), [...outcomes].join(', '))
  })

  test('PATCH /v1/orders/{id}: never 500 whatever the body', async () => {
    const order = (await app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId: onSale.id, quantity: 1 } })).json()
    await fc.assert(fc.asyncProperty(
      fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ status: member(fc.constantFrom('CANCELED', 'SHIPPED', 'PAID')), quantity: absentOr(anyValue) })),
      async (body) => {
        const res = await app.inject({ method: 'PATCH', url: `/v1/orders/${order.id}`, headers: { ...user.auth, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
        assert.ok(res.statusCode < 500, `500 for ${JSON.stringify(body)}: ${res.body}`)
        assert.ok([200, 400, 403, 409].includes(res.statusCode), `${JSON.stringify(body)} → ${res.statusCode} ${res.body}`)
      }
    ), { numRuns: 200 })
  })
})
