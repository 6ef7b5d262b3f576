import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { after, describe, test } from 'node:test'
import { buildTestApp, createUser } from '../helper.js'

// X-Request-Id on every response (docs/api.md): the client's own when it is sane (1 to
// 128 printable ASCII characters), otherwise a generated one; on errors it equals requestId.

const { app, url, close } = await buildTestApp({ BODY_LIMIT_BYTES: '1024' })
after(close)
const user = await createUser(app)
const etag = (await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })).headers.etag as string
const json = { 'content-type': 'application/json' }

// Every kind of response: success, 304, and each error the shared layer produces.
const kinds: Record<string, { status: number, method: string, url: string, headers?: Record<string, string>, payload?: string }> = {
  success: { status: 200, method: 'GET', url: `/v1/users/${user.id}` },
  created: { status: 201, method: 'POST', url: '/v1/sessions', headers: json, payload: JSON.stringify({ email: user.email, password: user.password }) },
  noContent: { status: 204, method: 'DELETE', url: '/v1/sessions/current', headers: {} }, // auth added below
  notModified: { status: 304, method: 'GET', url: `/v1/users/${user.id}`, headers: { 'if-none-match': etag } },
  validation: { status: 400, method: 'GET', url: '/v1/users/0' },
  malformed: { status: 400, method: 'POST', url: '/v1/users', headers: json, payload: '{x' },
  unauthenticated: { status: 401, method: 'GET', url: '/v1/sessions/current' },
  notFound: { status: 404, method: 'GET', url: '/nowhere' },
  methodNotAllowed: { status: 405, method: 'PATCH', url: '/v1/users/1' },
  tooLarge: { status: 413, method: 'POST', url: '/v1/users', headers: json, payload: JSON.stringify({ name: 'x'.repeat(2000) }) },
  unsupported: { status: 415, method: 'POST', url: '/v1/users', headers: { 'content-type': 'text/plain' }, payload: 'x' },
  badUrl: { status: 400, method: 'GET', url: '/v1/users/%E0%A4%A' }
}

async function send (kind: string, requestId?: string) {
  const k = kinds[kind]!
  const headers: Record<string, string> = { ...k.headers }
  if (kind === 'noContent') headers.authorization = `Bearer ${(await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })).json().token}`
  if (requestId !== undefined) headers['x-request-id'] = requestId
  const res = await app.inject({ method: k.method as 'GET', url: k.url, headers, ...(k.payload !== undefined ? { payload: k.payload } : {}) })
  assert.equal(res.statusCode, k.status, `${kind}: ${res.body}`)
  return res
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe('X-Request-Id', () => {
  test('every kind of response carries a generated one when the client sends none; errors repeat it as requestId', async () => {
    const seen = new Set<string>()
    for (const kind of Object.keys(kinds)) {
      const res = await send(kind)
      const id = res.headers['x-request-id']
      assert.match(String(id), UUID, kind)
      seen.add(String(id))
      if (res.statusCode >= 400) assert.equal(res.json().requestId, id, kind)
    }
    assert.equal(seen.size, Object.keys(kinds).length, 'a new id per request')
  })

  test('a sane client id is echoed on every kind of response and is the requestId', async () => {
    for (const kind of Object.keys(kinds)) {
      const id = `client-${kind}-7f3a`
      const res = await send(kind, id)
      assert.equal(res.headers['x-request-id'], id, kind)
      if (res.statusCode >= 400) assert.equal(res.json().requestId, id, kind)
    }
  })

  test('128 printable ASCII characters (spaces and symbols included) are kept', async () => {
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join('')
    const id = ('x' + printable).slice(0, 128).padEnd(128, '~')
    assert.equal(id.length, 128)
    const res = await send('notFound', id)
    assert.equal(res.headers['x-request-id'], id)
    assert.equal(res.json().requestId, id)
  })

  test('an insane one (129 characters, control characters, non-ASCII, empty) is replaced', async () => {
    for (const insane of ['a'.repeat(129), 'abc\x01def', 'abc\x7fdef', 'réquest', '']) {
      for (const kind of ['success', 'notFound', 'validation']) {
        const res = await send(kind, insane)
        const id = String(res.headers['x-request-id'])
        assert.match(id, UUID, `${kind} ${JSON.stringify(insane)}`)
        if (res.statusCode >= 400) assert.equal(res.json().requestId, id)
      }
    }
  })

  test('over real HTTP: echoed, and a tab (a control character Node lets through) is replaced', async () => {
    const base = await url()
    const echoed = await fetch(`${base}/nowhere`, { headers: { 'x-request-id': 'trace-42' } })
    assert.equal(echoed.headers.get('x-request-id'), 'trace-42')
    assert.equal(((await echoed.json()) as { requestId: string }).requestId, 'trace-42')
    const tabbed = await fetch(`${base}/health/live`, { headers: { 'x-request-id': 'a\tb' } })
    assert.match(String(tabbed.headers.get('x-request-id')), UUID)
  })

  test('over real HTTP, a 413 declared by Content-Length carries one too', async () => {
    const base = new URL(await url())
    const res = await new Promise<{ status: number, headers: Record<string, unknown>, body: string }>((resolve, reject) => {
      const req = httpRequest({ host: base.hostname, port: base.port, method: 'POST', path: '/v1/users', headers: { 'content-type': 'application/json', 'content-length': '5000', 'x-request-id': 'big-one' } }, (r) => {
        let body = ''
        r.on('data', (c: Buffer) => { body += c.toString() })
        r.on('end', () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body }))
      })
      req.on('error', reject)
      req.end('{"name":"' + 'x'.repeat(4988) + '"}')
    })
    assert.equal(res.status, 413)
    assert.equal(JSON.parse(res.body).code, 'PAYLOAD_TOO_LARGE')
    assert.equal(res.headers['x-request-id'], 'big-one')
    assert.equal(JSON.parse(res.body).requestId, 'big-one')
  })
})
