import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { listFingerprint } from '../../src/http/sorted-paging.js'

// A cursor carries the fingerprint of the list it was issued for: the digest of the list's sort
// and filters in a canonical form. Cursors outlive a process and a version, so the digest of a
// list must not change; the same list given in any order must have the same one, and two lists
// that differ must not (listFingerprint looks digests up by the list as given).

test('the digests cursors already carry', { timeout: 10_000 }, () => {
  assert.equal(listFingerprint({ sort: '-createdAt' }), 'p8CobhG4fRmYzc2m')
  assert.equal(listFingerprint({ sort: '-createdAt', q: undefined, authorId: undefined }), 'p8CobhG4fRmYzc2m')
  assert.equal(listFingerprint({ sort: 'price', category: ['FOOD', 'BOOK', 'FOOD'] }), 'Q0e1zfnfbcK67-SM')
  assert.equal(listFingerprint({ category: ['BOOK', 'FOOD'], sort: 'price' }), 'Q0e1zfnfbcK67-SM')
})

const value = fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.boolean(), fc.uniqueArray(fc.constantFrom('A', 'B', 'C', 'D'), { maxLength: 4 }), fc.constant(undefined))
const list = fc.dictionary(fc.constantFrom('sort', 'q', 'authorId', 'category', 'minPrice', 'onSale', 'createdAfter'), value, { maxKeys: 5 })
const defined = (l: Record<string, unknown>) => Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined).map(([k, v]) => [k, Array.isArray(v) ? [...v].sort() : v]))

test('the same list in another order has the same digest; another list has another', { timeout: 30_000 }, () => {
  fc.assert(fc.property(list, list, (a, b) => {
    const shuffled = Object.fromEntries(Object.entries(a).reverse().map(([k, v]) => [k, Array.isArray(v) ? [...v].reverse() : v]))
    assert.equal(listFingerprint(shuffled), listFingerprint(a))
    const same = JSON.stringify(Object.entries(defined(a)).sort()) === JSON.stringify(Object.entries(defined(b)).sort())
    assert.equal(listFingerprint(a) === listFingerprint(b), same)
  }), { numRuns: 2000 })
})
