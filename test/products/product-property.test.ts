import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, createAdmin } from '../helper.js'

// Property: whatever JSON is sent for each member of POST /v1/products, the answer is never a
// 500 and is exactly what the field rules of docs/api.md predict: 201 with the values
// sent (and the defaults), or 400 naming exactly the members that break a rule. The oracle is
// written from the documented rules (docs/api.md), independently of the route's schemas.

const { app, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)

const CATEGORIES = ['BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS']
const isInt = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
const RULES: Record<string, { required: boolean, ok: (v: unknown) => boolean }> = {
  name: { required: true, ok: (v) => typeof v === 'string' && v.isWellFormed() && !v.includes('\u0000') && /\S/u.test(v) && [...v].length <= 100 },
  price: { required: true, ok: (v) => isInt(v, 1, 1_000_000_000) },
  category: { required: true, ok: (v) => typeof v === 'string' && CATEGORIES.includes(v) },
  stock: { required: false, ok: (v) => isInt(v, 0, 1_000_000) },
  onSale: { required: false, ok: (v) => typeof v === 'boolean' }
}
const READ_ONLY = ['id', 'createdAt', 'updatedAt']

function expectedFailures (body: Record<string, unknown>): string[] {
  const failed = Object.entries(RULES).filter(([field, rule]) => field in body ? !rule.ok(body[field]) : rule.required).map(([field]) => field)
  for (const key of Object.keys(body)) if (!(key in RULES) && !READ_ONLY.includes(key)) failed.push(key)
  return failed.sort()
}

async function check (record: Record<string, unknown>): Promise<number> {
  // What the client actually sends (JSON has no -0, for one).
  const body = JSON.parse(JSON.stringify(record)) as Record<string, unknown>
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: body })
  assert.ok(res.statusCode < 500, `500 for ${JSON.stringify(body)}: ${res.body}`)
  const expected = expectedFailures(body)
  if (expected.length > 0) {
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)} → ${res.body}`)
    assert.equal(res.json().code, 'VALIDATION_ERROR')
    assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field).sort(), expected, JSON.stringify(body))
    return 400
  }
  assert.equal(res.statusCode, 201, `${JSON.stringify(body)} → ${res.body}`)
  const created = res.json()
  assert.deepEqual({ name: created.name, price: created.price, category: created.category, stock: created.stock, onSale: created.onSale }, { name: body.name, price: body.price, category: body.category, stock: body.stock ?? 0, onSale: body.onSale ?? true })
  return 201
}

const compact = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined))
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(' ', '\t', '\u0000', '\ud800', 'a', '😀'), maxLength: 105 })
)
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), anyString, fc.double(), fc.constantFrom(1.5, -0, 1e21, Number.MAX_SAFE_INTEGER + 2))
const absentOr = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 8 })
const member = <T>(plausible: fc.Arbitrary<T>) => fc.oneof({ arbitrary: plausible, weight: 3 }, { arbitrary: anyValue, weight: 1 })

describe('POST /v1/products property', () => {
  test('arbitrary JSON values for every member: never 500, outcome matches the field rules', async () => {
    const outcomes = new Set<number>()
    await fc.assert(fc.asyncProperty(
      fc.record({
        name: absentOr(member(fc.oneof(fc.string({ maxLength: 102 }), fc.string({ unit: 'grapheme', minLength: 99, maxLength: 101 })))),
        price: absentOr(member(fc.integer({ min: -2, max: 1_000_000_002 }))),
        category: absentOr(member(fc.constantFrom(...CATEGORIES, 'book', 'TOYS', ''))),
        stock: absentOr(member(fc.integer({ min: -2, max: 1_000_002 }))),
        onSale: absentOr(member(fc.boolean())),
        id: absentOr(anyValue),
        role: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: fc.constantFrom('ADMIN', null), weight: 1 })
      }),
      async (record) => { outcomes.add(await check(compact(record))) }
    ), { numRuns: 300 })
    assert.ok(outcomes.has(201) && outcomes.has(400), `outcomes seen: ${[...outcomes].join(', ')}`)
  })
})
