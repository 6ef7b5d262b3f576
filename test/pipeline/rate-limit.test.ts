import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import ipaddr from 'ipaddr.js'
import { clientKey } from '../../src/http/client-address.js'
import { FixedWindows } from '../../src/pipeline/rate-limit.js'
import { assertError, buildTestApp } from '../helper.js'

// The general limit (RATE_LIMIT_PER_MINUTE, 3 here): 429 in our error body with Retry-After and
// the IETF RateLimit fields; exempt by route (health, docs, OpenAPI), never by raw URL; keyed by
// the client address, IPv6 by its /64.

const { app, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '3' })
after(close)
const get = (url: string, remoteAddress: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, remoteAddress, headers })

describe('RATE_LIMIT_PER_MINUTE', () => {
  test('the 4th request in a minute from one address is 429 with Retry-After and RateLimit fields', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await get('/v1/users/1', '10.0.0.1')
      assertError(res, 404, 'USER_NOT_FOUND')
      assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
      assert.match(String(res.headers.ratelimit), new RegExp(`^"default";r=${2 - i};t=\\d+$`))
      assert.equal(res.headers['x-ratelimit-limit'], undefined, 'not the plugin\'s own headers')
    }
    const limited = await get('/v1/users/1', '10.0.0.1', { accept: 'application/problem+json' })
    assertError(limited, 429, 'TOO_MANY_REQUESTS')
    assert.match(String(limited.headers['content-type']), /^application\/problem\+json/)
    assert.match(String(limited.headers['retry-after']), /^[1-9]\d*$/)
    assert.ok(Number(limited.headers['retry-after']) <= 60)
    assert.match(String(limited.headers.ratelimit), /^"default";r=0;t=[1-9]\d*$/)
    assert.equal(limited.headers['ratelimit-policy'], '"default";q=3;w=60')
  })

  test('another address has its own window', async () => {
    assertError(await get('/v1/users/1', '10.0.0.2'), 404, 'USER_NOT_FOUND')
  })

  test('exempt by route: health, the docs and the OpenAPI document, whatever the query', async () => {
    for (let i = 0; i < 3; i++) await get('/v1/users/1', '10.0.0.3')
    assertError(await get('/v1/users/1', '10.0.0.3'), 429, 'TOO_MANY_REQUESTS')
    for (const url of ['/health/live', '/health/live?x=1', '/health/ready', '/openapi.json', '/docs/json', '/docs']) {
      const res = await get(url, '10.0.0.3')
      assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`)
      assert.equal(res.headers.ratelimit, undefined)
    }
  })

  test('not by raw URL: /metrics?x=1 and unknown paths count like any request', async () => {
    for (let i = 0; i < 3; i++) assertError(await get('/metrics?x=1', '10.0.0.4'), 404, 'NOT_FOUND')
    assertError(await get('/metrics?x=1', '10.0.0.4'), 429, 'TOO_MANY_REQUESTS')
    assertError(await get('/health/live/../../v1/users/1', '10.0.0.4'), 429, 'TOO_MANY_REQUESTS')
    assertError(await get('/nowhere', '10.0.0.4'), 429, 'TOO_MANY_REQUESTS')
  })
})

describe('whose window a request counts in', () => {
  test('an IPv6 client by its /64, whatever the notation; an IPv4-mapped address as IPv4', async () => {
    for (let i = 0; i < 3; i++) assertError(await get('/v1/users/1', i % 2 === 0 ? '2001:db8:a:b::1' : '2001:0db8:000a:000b:ffff:ffff:ffff:ffff'), 404, 'USER_NOT_FOUND')
    assertError(await get('/v1/users/1', '2001:db8:a:b:1:2:3:4'), 429, 'TOO_MANY_REQUESTS')
    assertError(await get('/v1/users/1', '2001:db8:a:c::1'), 404, 'USER_NOT_FOUND')
    for (let i = 0; i < 3; i++) assertError(await get('/v1/users/1', '10.0.0.9'), 404, 'USER_NOT_FOUND')
    assertError(await get('/v1/users/1', '::ffff:10.0.0.9'), 429, 'TOO_MANY_REQUESTS')
  })

  test('the keys themselves', () => {
    assert.equal(clientKey('10.1.2.3'), '10.1.2.3')
    assert.equal(clientKey('::ffff:10.1.2.3'), '10.1.2.3')
    assert.equal(clientKey('::FFFF:10.1.2.3'), '10.1.2.3')
    assert.equal(clientKey('2001:db8::'), '2001:db8:0:0::/64')
    assert.equal(clientKey('2001:DB8:0:0:1::'), '2001:db8:0:0::/64')
    assert.equal(clientKey('::1'), '0:0:0:0::/64')
    assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64')
    assert.equal(clientKey('1:2:3:4:5:6:7.8.9.10'), '1:2:3:4::/64')
    assert.equal(clientKey('not an address'), 'not an address')
    // A `::` before the fourth group stands for as many zero groups as the rest leaves room for.
    assert.equal(clientKey('2001::1:2:3:4:5:6'), '2001:0:1:2::/64')
    assert.equal(clientKey('2001:db8::1:2:3:4:5'), '2001:db8:0:1::/64')
    assert.equal(clientKey('::1:2:3:4:5:6:7'), '0:1:2:3::/64')
  })

  test('every spelling of an IPv6 address is the key of its /64 (against ipaddr.js)', () => {
    const group = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff }))
    fc.assert(fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), fc.boolean(), (groups, upper) => {
      const address = ipaddr.IPv6.parse(groups.map((g) => g.toString(16)).join(':'))
      if (address.isIPv4MappedAddress()) return
      const expected = groups.slice(0, 4).map((g) => g.toString(16)).join(':') + '::/64'
      const spell = (text: string) => upper ? text.toUpperCase() : text
      const fixedLength = groups.map((g) => g.toString(16).padStart(4, '0')).join(':')
      for (const text of [address.toString(), address.toRFC5952String(), address.toNormalizedString(), fixedLength]) {
        assert.equal(clientKey(spell(text)), expected, text)
      }
    }), { numRuns: 500 })
  })

  test('a window starts at its first request, ends a minute later, and the store stays bounded', () => {
    const windows = new FixedWindows(3)
    assert.equal(windows.hit('a', 0).count, 1)
    assert.equal(windows.hit('a', 59_999).count, 2)
    assert.deepEqual(windows.hit('a', 60_000), { count: 1, endsAt: 120_000 })
    windows.hit('b', 70_000)
    windows.hit('c', 80_000)
    windows.hit('d', 90_000)
    assert.equal(windows.size, 3, 'the oldest window (a) made room')
    assert.equal(windows.hit('b', 91_000).count, 2, 'b is still counted')
    assert.equal(windows.hit('a', 92_000).count, 1, 'a starts over')
  })
})

describe('defaults', () => {
  test('on by default at 600 per minute; 0 turns it off', async () => {
    const byDefault = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '' })
    const off = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '0' })
    try {
      const res = await byDefault.app.inject({ method: 'GET', url: '/v1/users/1' })
      assert.equal(res.headers['ratelimit-policy'], '"default";q=600;w=60')
      assert.match(String(res.headers.ratelimit), /^"default";r=599;t=\d+$/)
      const free = await off.app.inject({ method: 'GET', url: '/v1/users/1' })
      assert.equal(free.headers['ratelimit-policy'], undefined)
    } finally {
      await byDefault.close()
      await off.close()
    }
  })
})
