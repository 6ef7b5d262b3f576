import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { newKey } from '../../src/auth/api-key-format.js'
import { buildTestApp, type TestApp } from '../helper.js'

// Every request counts in exactly one window of the general rate limit: a request made with a
// real API key in the key's own, every other one in its address's. A credential the service
// does not know buys nothing: once an address has spent its window, every operation of the
// document refuses it with 429, whatever made-up key, malformed key or stream ticket it sends,
// and however it asks (a stream or not).

const LIMIT = 3
// The routes the limit never counts: health, the document, and file reads (a page shows many images).
const EXEMPT = new Set(['GET /health/live', 'GET /health/ready', 'GET /openapi.json', 'GET /v1/files/{fileId}', 'GET /v1/files/{fileId}/{variant}'])

let t: TestApp
let operations: Array<{ key: string, method: string, url: string }>

before(async () => {
  t = await buildTestApp({ RATE_LIMIT_PER_MINUTE: String(LIMIT) })
  const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> }
  operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods)
    .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map((method) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), url: path.replace(/\{[^}]+\}/g, '1') })))
    .filter((op) => !EXEMPT.has(op.key))
})
after(async () => { await t.close() })

const unknownKey = (): string => newKey().key
const badChecksum = (): string => { const key = newKey().key; return key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A') }
const ticket = 'est_' + 'x'.repeat(43)

const variants: Array<{ name: string, headers: () => Record<string, string>, query: string }> = [
  { name: 'an unknown key', headers: () => ({ authorization: `Bearer ${unknownKey()}` }), query: '' },
  { name: 'a key with a wrong checksum', headers: () => ({ authorization: `bearer ${badChecksum()}` }), query: '' },
  { name: 'an unknown key and a made-up ticket, asking for a stream', headers: () => ({ authorization: `Bearer ${unknownKey()}`, accept: 'text/event-stream' }), query: `?ticket=${ticket}` },
  { name: 'an unknown key and a made-up ticket, not asking for a stream', headers: () => ({ authorization: `Bearer ${unknownKey()}`, accept: 'text/event-stream;q=0, application/json' }), query: `?ticket=${ticket}` },
  { name: 'an unknown key and a ticket named with an escape, asking for a stream', headers: () => ({ authorization: `Bearer ${unknownKey()}`, accept: 'text/event-stream' }), query: `?%74icket=${ticket}` },
  { name: 'a made-up ticket alone, asking for a stream', headers: () => ({ accept: 'text/event-stream' }), query: `?ticket=${ticket}` }
]

test('once an address has spent its window, every operation refuses every made-up credential with 429', async () => {
  for (let i = 0; i < LIMIT; i++) assert.notEqual((await t.app.inject({ method: 'GET', url: '/v1/posts' })).statusCode, 429)
  assert.equal((await t.app.inject({ method: 'GET', url: '/v1/posts' })).statusCode, 429)
  assert.ok(operations.length > 40)
  const escaped: string[] = []
  for (const op of operations) {
    for (const variant of variants) {
      const res = await t.app.inject({ method: op.method, url: op.url + variant.query, headers: { ...variant.headers(), 'content-type': 'application/json' }, payload: op.method === 'GET' || op.method === 'DELETE' ? undefined : '{}' })
      if (res.statusCode !== 429) escaped.push(`${op.key} with ${variant.name}: ${res.statusCode} ${res.json().code as string}`)
      else assert.equal(res.json().code, 'TOO_MANY_REQUESTS')
    }
  }
  assert.deepEqual(escaped, [])
})
