import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { looksLikeKey, newKey, wellFormedKey } from '../../src/auth/api-key-format.js'

// A key's checksum catches every mistyped character, so a wrong key is refused without a lookup.

test('a new key is well formed, distinct, and shown by its first 11 characters', () => {
  const keys = Array.from({ length: 200 }, () => newKey())
  for (const { key, prefix } of keys) {
    assert.match(key, /^rk_[A-Za-z0-9]{38}$/)
    assert.ok(wellFormedKey(key) && looksLikeKey(key))
    assert.equal(prefix, key.slice(0, 11))
  }
  assert.equal(new Set(keys.map((k) => k.key)).size, keys.length)
})

test('any one character changed, dropped or added breaks the checksum or the form', () => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  fc.assert(fc.property(fc.integer({ min: 3, max: 40 }), fc.constantFrom(...alphabet), fc.constantFrom('change', 'drop', 'add'), (at, char, how) => {
    const { key } = newKey()
    const broken = how === 'change' ? key.slice(0, at) + char + key.slice(at + 1) : how === 'drop' ? key.slice(0, at) + key.slice(at + 1) : key.slice(0, at) + char + key.slice(at)
    fc.pre(broken !== key)
    assert.equal(wellFormedKey(broken), false, `${key} -> ${broken}`)
  }), { numRuns: 2000 })
  assert.equal(looksLikeKey('abc'), false)
})
