import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { redactedUrl } from '../../src/pipeline/redacted-url.js'

// Whatever a URL around it looks like, and however the name `ticket` is spelled (any case, any
// letter percent-encoded), a ticket's value never survives redaction; a URL with no credential
// in it is logged as it came.

const spelled = (name: string): fc.Arbitrary<string> => fc.tuple(...[...name].map((c) => fc.constantFrom(c, c.toUpperCase(), `%${c.charCodeAt(0).toString(16)}`, `%${c.charCodeAt(0).toString(16).toUpperCase()}`)))
  .map((parts) => parts.join(''))
const plainName = fc.constantFrom('after', 'limit', 'type', 'q', 'authorId', 'sort', 'cursor', 'minPrice')
const plainValue = fc.stringMatching(/^[a-zA-Z0-9.~-]{0,12}$/)
const pair = fc.tuple(plainName, plainValue).map(([n, v]) => `${n}=${v}`)
const secret = fc.stringMatching(/^[A-Za-z0-9_-]{16,43}$/).map((s) => `SECRET${s}`)

test('a ticket under any spelling of its name is redacted', () => {
  fc.assert(fc.property(fc.array(pair, { maxLength: 4 }), fc.array(pair, { maxLength: 4 }), spelled('ticket'), secret, (before, afterIt, name, value) => {
    const url = `/v1/events?${[...before, `${name}=${value}`, ...afterIt].join('&')}`
    const shown = redactedUrl(url)
    assert.ok(!shown.includes(value), shown)
    assert.ok(shown.includes(`${name}=[REDACTED]`), shown)
  }), { numRuns: 500 })
})

test('a URL without a credential is unchanged', () => {
  fc.assert(fc.property(fc.constantFrom('/v1/posts', '/v1/products/12', '/v1/events'), fc.array(pair, { maxLength: 6 }), (path, pairs) => {
    const url = pairs.length === 0 ? path : `${path}?${pairs.join('&')}`
    assert.equal(redactedUrl(url), url)
  }), { numRuns: 500 })
})
