import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { decimalsUpTo, ID_PATTERN, MAX_ID } from '../../src/http/schemas.js'

// The document's id pattern says exactly what the service takes: 1 to 2^63 − 1 in decimal, no
// sign, no leading zero. A client's validator that uses it refuses what the service would.

const id = new RegExp(ID_PATTERN)
const accepted = (text: string): boolean => /^[1-9][0-9]*$/.test(text) && BigInt(text) <= MAX_ID

test('the id pattern matches exactly the decimal integers from 1 to 2^63 − 1', () => {
  for (const text of ['1', '9', '10', '42', '9223372036854775807', '9223372036854775806', '9223372036854775799', '8999999999999999999', '999999999999999999']) assert.ok(id.test(text), text)
  for (const text of ['0', '01', '-1', '+1', '1.0', '', ' 1', '9223372036854775808', '9223372036854775810', '9300000000000000000', '9999999999999999999', '10000000000000000000']) assert.ok(!id.test(text), text)
  // Around the bound, and anywhere: the pattern and the arithmetic agree.
  fc.assert(fc.property(fc.oneof(fc.bigInt(0n, 2n ** 64n), fc.bigInt(MAX_ID - 100_000n, MAX_ID + 100_000n), fc.bigInt(0n, 10n ** 18n)), (n) => {
    assert.equal(id.test(n.toString()), accepted(n.toString()), n.toString())
  }), { numRuns: 20_000 })
  // Every bound, not only this one.
  fc.assert(fc.property(fc.bigInt(1n, 10n ** 20n), fc.bigInt(0n, 10n ** 21n), (max, n) => {
    assert.equal(new RegExp(decimalsUpTo(max)).test(n.toString()), n >= 1n && n <= max, `${n} against ${max}`)
  }), { numRuns: 20_000 })
})
