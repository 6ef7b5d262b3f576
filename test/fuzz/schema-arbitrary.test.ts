import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { SEED } from './fuzz-app.js'
import { breakersOf } from './invalid-values.js'
import { operationsOf, resolveRefs } from './openapi-operations.js'
import { assertUnderstood, ID_PATTERN, NON_BLANK, validArbitrary } from './schema-arbitrary.js'

// The converter itself: what it generates is what the schema accepts, what the breakers generate
// is what it refuses, an unknown keyword stops it, and a document reads the same with its
// schemas inline or behind `$ref`s.

const ajv = new Ajv2020({ strict: false, allErrors: true })
ajv.addFormat('email', /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/)
ajv.addFormat('int64', { type: 'number', validate: Number.isSafeInteger })
// The document's own keywords, as the service reads them (src/pipeline/validation.ts).
ajv.addKeyword({ keyword: 'x-well-formed', type: 'string', validate: (_: unknown, s: string) => s.isWellFormed() && !s.includes('\u0000') })
ajv.addKeyword({ keyword: 'x-int64-id', type: 'string', validate: (_: unknown, s: string) => /^[1-9][0-9]{0,18}$/.test(s) && BigInt(s) <= 9223372036854775807n })
ajv.addKeyword({ keyword: 'x-require-one-of', type: 'object', validate: (names: string[], o: object) => names.some((n) => Object.hasOwn(o, n)) })

const SCHEMAS: Record<string, Record<string, unknown>> = {
  'non-blank text': { type: 'string', pattern: NON_BLANK, 'x-well-formed': true, maxLength: 20 },
  password: { type: 'string', pattern: NON_BLANK, minLength: 8, maxLength: 50 },
  email: { type: 'string', format: 'email', maxLength: 254 },
  id: { type: 'string', pattern: ID_PATTERN, 'x-int64-id': true },
  'idempotency key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$' },
  quantity: { type: 'integer', minimum: 1, maximum: 1000 },
  'body id': { type: 'integer', format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  category: { type: 'string', enum: ['BOOK', 'FOOD'] },
  literal: { const: 'Bearer' },
  'nullable name': { type: ['string', 'null'], maxLength: 3 },
  'either form': { anyOf: [{ type: 'integer', minimum: 5 }, { type: 'boolean' }] },
  'one of': { oneOf: [{ type: 'string', enum: ['A'] }, { type: 'null' }] },
  object: {
    type: 'object',
    additionalProperties: false,
    required: ['title'],
    minProperties: 2,
    properties: { title: { type: 'string', pattern: NON_BLANK }, count: { type: 'integer', minimum: 0 }, note: { readOnly: true } }
  },
  patch: { type: 'object', additionalProperties: false, 'x-require-one-of': ['a', 'b'], properties: { a: { type: 'boolean' }, b: { type: 'boolean' } } },
  'standard patch': { type: 'object', additionalProperties: false, anyOf: [{ required: ['a'] }, { required: ['b'] }], properties: { a: { type: 'boolean' }, b: { type: 'boolean' } } },
  'narrowed by allOf': {
    allOf: [
      { type: 'object', required: ['code'], properties: { code: { type: 'string' }, message: { type: 'string', maxLength: 5 } } },
      { properties: { code: { enum: ['A', 'B'] } } }
    ]
  }
}

describe('JSON Schema to fast-check', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(`${name}: generated values are accepted, broken ones refused`, () => {
      const validate = ajv.compile(schema)
      fc.assert(fc.property(validArbitrary(schema), (value) => {
        assert.ok(validate(value), `${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`)
      }), { seed: SEED, numRuns: 100 })
      for (const breaker of breakersOf(schema, 'body')) {
        fc.assert(fc.property(breaker.value, (value) => {
          assert.ok(!validate(value), `${breaker.rule}: ${JSON.stringify(value)} is accepted`)
        }), { seed: SEED, numRuns: 30 })
      }
    })
  }

  test('the patch\'s required choice is honoured, in both forms', () => {
    for (const schema of [SCHEMAS.patch!, SCHEMAS['standard patch']!]) {
      fc.assert(fc.property(validArbitrary(schema), (value) => {
        assert.ok(Object.hasOwn(value as object, 'a') || Object.hasOwn(value as object, 'b'))
      }), { seed: SEED, numRuns: 50 })
    }
  })

  test('an unknown keyword, pattern or format stops the converter', () => {
    assert.throws(() => validArbitrary({ type: 'string', multipleOf: 2 }), /does not understand the schema keyword "multipleOf"/)
    assert.throws(() => validArbitrary({ type: 'object', properties: { a: { type: 'array', contains: { type: 'string' } } } }), /"contains"/)
    assert.throws(() => validArbitrary({ type: 'string', pattern: '^[a-z]+$' }), /no generator for the pattern/)
    assert.throws(() => validArbitrary({ type: 'string', format: 'uuid' }), /no generator for the format "uuid"/)
    assert.throws(() => assertUnderstood({ type: 'string', if: {} }, 'here'), /here: .*"if"/)
  })
})

describe('the document read with inline or referenced schemas', () => {
  const Post = { type: 'object', required: ['id'], properties: { id: { type: 'integer' }, title: { type: 'string', maxLength: 5 } } }
  const op = (schema: unknown) => ({ get: { responses: { 200: { description: 'ok', content: { 'application/json': { schema } } } } } })
  const inline = { paths: { '/posts/{id}': op(Post) } }
  const pointer = { paths: { '/posts/{id}': op({ $ref: '#/components/schemas/Post' }) }, components: { schemas: { Post } } }
  const byId = { paths: { '/posts/{id}': op({ $ref: 'Post' }) }, components: { schemas: { 'def-0': { $id: 'Post', ...Post } } } }

  test('a JSON pointer and a schema $id resolve to the same operation as the inline schema', () => {
    const expected = operationsOf(inline)
    assert.deepEqual(operationsOf(pointer), expected)
    assert.deepEqual(operationsOf(byId), expected)
  })

  test('a description beside a $ref is kept; a missing target or a cycle is an error', () => {
    const doc = { components: { schemas: { A: { type: 'string' }, Loop: { $ref: '#/components/schemas/Loop' } } } }
    assert.deepEqual(resolveRefs(doc, { $ref: '#/components/schemas/A', description: 'x' }), { type: 'string', description: 'x' })
    assert.throws(() => resolveRefs(doc, { $ref: '#/components/schemas/Nope' }), /unresolvable \$ref/)
    assert.throws(() => resolveRefs(doc, { $ref: '#/components/schemas/Loop' }), /recursive \$ref/)
  })
})
