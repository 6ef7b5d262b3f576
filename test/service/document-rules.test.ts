import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { decimalsUpTo, ID_PATTERN, MAX_ID } from '../../src/http/schemas.js'
import { buildTestApp } from '../helper.js'

// What the published document says is what the service enforces, for a validator that knows
// only standard JSON Schema (the document's own x- keywords ignored): ids are exactly 1 to
// 2^63 − 1 in decimal, and text is well formed (no NUL, no unpaired surrogate) and, where
// required, not blank.

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

test('a standard validator of the published document refuses the text the service refuses', async () => {
  const t = await buildTestApp()
  after(t.close)
  const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { components: { schemas: Record<string, object> } }
  // Plain Ajv, with and without the `u` flag: the document's x- keywords are unknown to it.
  for (const unicodeRegExp of [true, false]) {
    const ajv = new Ajv2020({ strict: false, unicodeRegExp, validateFormats: false })
    for (const [name, schema] of Object.entries(doc.components.schemas)) ajv.addSchema({ ...schema, $id: name })
    const user = ajv.getSchema('UserCreateRequest')!
    const post = ajv.getSchema('PostCreateRequest')!
    const endpoint = ajv.getSchema('WebhookEndpointCreateRequest')!
    assert.ok(user({ email: 'a@example.com', name: 'Ann', password: 'abcdefgh' }))
    assert.ok(post({ title: 'Emoji 😀 and é', content: 'x' }))
    for (const password of ['abc\u0000defgh', 'abcdefg\ud800', '\udc00abcdefgh', '          ']) assert.ok(!user({ email: 'a@example.com', name: 'Ann', password }), JSON.stringify(password))
    for (const title of ['a\u0000', 'b\ud83d', ' \t ']) assert.ok(!post({ title, content: 'x' }), JSON.stringify(title))
    assert.ok(endpoint({ url: 'https://example.com/hooks', description: '' }))
    assert.ok(!endpoint({ url: 'https://example.com/hooks', description: 'x\u0000' }))
    // The service says the same.
    const refused = await t.app.inject({ method: 'POST', url: '/v1/users', payload: { email: 'nul@example.com', name: 'Nul', password: 'abc\u0000defgh' } })
    assert.equal(refused.statusCode, 400)
  }
})
