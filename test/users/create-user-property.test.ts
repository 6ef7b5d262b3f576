import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp } from '../helper.js'

// Property: whatever JSON is sent for each member of POST /v1/users, the answer is never a 500,
// and it is exactly what the field rules of docs/api.md predict: 201 (or 409 for an
// e-mail taken before), or 400 naming exactly the members that break a rule.
// The oracle below is written from the documented rules (docs/api.md), independently of the route's schemas.

const { app, close } = await buildTestApp()
after(close)

const WHATWG_LOCAL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+$/
const WHATWG_LABEL = /^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/

function isWhatwgEmail (s: string): boolean {
  const at = s.indexOf('@')
  if (at < 0 || s.indexOf('@', at + 1) >= 0) return false
  return WHATWG_LOCAL.test(s.slice(0, at)) && s.slice(at + 1).split('.').every((label) => WHATWG_LABEL.test(label))
}

function textOk (value: unknown, min: number, max: number): value is string {
  if (typeof value !== 'string') return false
  if (value.includes('\u0000') || !value.isWellFormed()) return false
  if (!/\S/u.test(value)) return false
  const length = [...value].length
  return length >= min && length <= max
}

const RULES: Record<string, (v: unknown) => boolean> = {
  email: (v) => textOk(v, 1, 254) && isWhatwgEmail(v),
  password: (v) => textOk(v, 8, 50),
  name: (v) => textOk(v, 1, 20)
}

/** The set of fields the documented rules say must fail. */
function expectedFailures (body: Record<string, unknown>): string[] {
  const failed = Object.keys(RULES).filter((field) => !(field in body) || !RULES[field]!(body[field]))
  for (const key of Object.keys(body)) if (!(key in RULES) && key !== 'id') failed.push(key)
  return failed.sort()
}

const seen = new Set<string>()

async function check (body: Record<string, unknown>): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/v1/users', payload: body })
  assert.ok(res.statusCode < 500, `500 for ${JSON.stringify(body)}: ${res.body}`)
  const expected = expectedFailures(body)
  if (expected.length > 0) {
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)} → ${res.body}`)
    assert.equal(res.json().code, 'VALIDATION_ERROR')
    assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field).sort(), expected, JSON.stringify(body))
    return res.statusCode
  }
  const key = (body.email as string).toLowerCase()
  if (seen.has(key)) {
    assert.equal(res.statusCode, 409, res.body)
    assert.equal(res.json().code, 'DUPLICATE_EMAIL')
    return res.statusCode
  }
  assert.equal(res.statusCode, 201, `${JSON.stringify(body)} → ${res.body}`)
  seen.add(key)
  assert.deepEqual(res.json(), { id: res.json().id, email: body.email, name: body.name })
  return res.statusCode
}

/** Drops the members generated as undefined (absent). */
function compact (record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined))
}

const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 25 }),
  fc.string({ unit: fc.constantFrom(' ', '\t', '\u00a0', '\u0000', '\ud800', 'a', '😀'), maxLength: 55 })
)
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), anyString)
/** Absent one time in ten. */
const absentOr = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 10 })
/** Mostly plausible values (so that creations happen too), sometimes anything at all. */
const member = <T>(plausibleValue: fc.Arbitrary<T>) => fc.oneof({ arbitrary: plausibleValue, weight: 3 }, { arbitrary: anyValue, weight: 1 })

const plausible = {
  email: fc.oneof(fc.emailAddress(), fc.tuple(anyString, fc.domain()).map(([l, d]) => `${l}@${d}`)),
  password: fc.oneof(fc.string({ minLength: 6, maxLength: 52 }), fc.string({ unit: 'grapheme', minLength: 7, maxLength: 51 })),
  name: fc.oneof(fc.string({ maxLength: 22 }), fc.string({ unit: 'grapheme', minLength: 19, maxLength: 21 }))
}

describe('POST /v1/users property', () => {
  test('arbitrary JSON values for every member: never 500, outcome matches the field rules', async () => {
    const outcomes = new Set<number>()
    await fc.assert(fc.asyncProperty(
      fc.record({
        email: absentOr(member(plausible.email)),
        password: absentOr(member(plausible.password)),
        name: absentOr(member(plausible.name)),
        id: absentOr(anyValue),
        // Now and then an unknown member (mostly absent, so that valid bodies happen too).
        role: fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 }, { arbitrary: fc.constantFrom('ADMIN', 'USER', null), weight: 1 })
      }),
      async (record) => { outcomes.add(await check(compact(record))) }
    ), { numRuns: 100 })
    // The run exercised both sides of the rules, not only refusals.
    assert.ok(outcomes.has(201) && outcomes.has(400), [...outcomes].join(','))
  })

  test('arbitrary strings in one member, the others valid: never 500, outcome matches', async () => {
    const outcomes = new Set<number>()
    let n = 0
    await fc.assert(fc.asyncProperty(
      fc.constantFrom('email', 'password', 'name'),
      fc.oneof(anyString, plausible.email, plausible.password, plausible.name),
      async (field, value) => {
        n += 1
        const body: Record<string, unknown> = { email: `prop${n}.${Date.now()}@example.com`, password: 'correct horse', name: 'Prop' }
        body[field] = value
        outcomes.add(await check(body))
      }
    ), { numRuns: 100 })
    assert.ok(outcomes.has(201) && outcomes.has(400), [...outcomes].join(','))
  })
})
