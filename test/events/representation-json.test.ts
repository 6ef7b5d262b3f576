import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { representationJson } from '../../src/events/event.repository.js'

// An event's data is written by representationJson, not JSON.stringify with a replacer (faster,
// src/events/event.repository.ts): for any representation it must write the very same text,
// BigInts as JSON numbers.

const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON
const reference = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) => typeof v === 'bigint' ? rawJson(v.toString()) : v)

test('property: representationJson writes what JSON.stringify writes, BigInts as numbers', () => {
  const leaf = fc.oneof(
    fc.string({ unit: 'binary' }), fc.string(), fc.integer(), fc.double({ noNaN: false }), fc.boolean(), fc.constant(null),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n }), fc.constant(undefined), fc.date({ noInvalidDate: true })
  )
  const value = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(fc.string({ unit: 'binary' }), tie('node'), { maxKeys: 5 }))
  })).node
  fc.assert(fc.property(value, (v) => {
    assert.equal(representationJson(v), reference(v) ?? 'null')
  }), { numRuns: 2000, seed: 20261127 })
  // A post as the API shows it.
  const post = { id: 12n, title: 'Café "quoted" \\ \u2028', content: '😀', author: { id: 3n, name: 'Ann' }, views: 0n, createdAt: '2026-11-27T00:00:00.000Z', updatedAt: '2026-11-27T00:00:00.000Z' }
  assert.equal(representationJson(post), reference(post))
})
