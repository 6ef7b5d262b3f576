import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// Routing is the first check (docs/api.md): an unknown path is 404 NOT_FOUND, a
// known path with another method is 405 METHOD_NOT_ALLOWED with Allow, whatever the request's
// body, content type or size.

const { app, close } = await buildTestApp({ BODY_LIMIT_BYTES: '1024' })
after(close)
const user = await createUser(app)
const json = { 'content-type': 'application/json' }
const oversized = JSON.stringify({ name: 'x'.repeat(4000) })

describe('unknown routes: 404 NOT_FOUND', () => {
  test('unknown paths, any method', async () => {
    for (const [method, url] of [['GET', '/nowhere'], ['POST', '/v1/nowhere'], ['DELETE', '/v2/users/1'], ['GET', '/v1/users/1/nowhere'], ['GET', '/v1/users/1/'], ['GET', '/V1/USERS/1']] as const) {
      assertError(await app.inject({ method, url }), 404, 'NOT_FOUND')
    }
  })

  test('HEAD of an unknown path is 404 with the headers and no body', async () => {
    const res = await app.inject({ method: 'HEAD', url: '/nowhere' })
    assert.equal(res.statusCode, 404)
    assert.equal(res.body, '')
    assert.ok(res.headers['x-request-id'])
  })

  test('still 404 with a malformed, non-JSON or oversized body', async () => {
    assertError(await app.inject({ method: 'POST', url: '/nowhere', headers: json, payload: '{x' }), 404, 'NOT_FOUND')
    assertError(await app.inject({ method: 'POST', url: '/nowhere', headers: { 'content-type': 'text/plain' }, payload: 'x' }), 404, 'NOT_FOUND')
    assertError(await app.inject({ method: 'PUT', url: '/v1/nowhere', headers: json, payload: oversized }), 404, 'NOT_FOUND')
    assertError(await app.inject({ method: 'POST', url: '/nowhere', headers: { 'content-type': 'application/merge-patch+json' }, payload: '[' }), 404, 'NOT_FOUND')
  })

  test('a file missing under the docs\' static route is 404, not 405', async () => {
    assertError(await app.inject({ method: 'GET', url: '/docs/static/no-such-file.js' }), 404, 'NOT_FOUND')
  })
})

describe('known path, other method: 405 METHOD_NOT_ALLOWED with Allow', () => {
  const cases: Array<[string, string, string]> = [
    ['PATCH', '/v1/users/1', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/v1/users/1', 'DELETE, GET, HEAD, PUT'],
    ['DELETE', '/v1/users', 'GET, HEAD, POST'],
    ['PUT', '/v1/users', 'GET, HEAD, POST'],
    ['POST', '/v1/system', 'GET, HEAD'],
    ['DELETE', '/console/', 'GET, HEAD'],
    ['PUT', '/v1/sessions/current', 'DELETE, GET, HEAD'],
    ['GET', '/v1/users/1/password', 'PUT'],
    ['POST', '/health/live', 'GET, HEAD'],
    ['OPTIONS', '/v1/users/1', 'DELETE, GET, HEAD, PUT']
  ]

  test('Allow lists exactly the path\'s methods', async () => {
    for (const [method, url, allow] of cases) {
      const res = await app.inject({ method: method as 'GET', url })
      assertError(res, 405, 'METHOD_NOT_ALLOWED')
      assert.equal(res.headers.allow, allow, `${method} ${url}`)
    }
  })

  test('the Allow methods really are served there', async () => {
    for (const [, url, allow] of cases) {
      for (const method of allow.split(', ')) {
        const res = await app.inject({ method: method as 'GET', url })
        assert.notEqual(res.statusCode, 405, `${method} ${url}`)
        assert.notEqual(res.statusCode, 404, `${method} ${url}`)
      }
    }
  })

  test('405 comes before the body: a bad content type, malformed JSON, an oversized body', async () => {
    const bodies = [
      { headers: { 'content-type': 'text/plain' }, payload: 'x' },
      { headers: json, payload: '{x' },
      { headers: json, payload: oversized },
      { headers: { 'content-type': 'application/merge-patch+json' }, payload: '{x' }
    ]
    for (const body of bodies) {
      const res = await app.inject({ method: 'PATCH', url: `/v1/users/${user.id}`, ...body })
      assertError(res, 405, 'METHOD_NOT_ALLOWED')
      assert.equal(res.headers.allow, 'DELETE, GET, HEAD, PUT')
    }
  })

  test('405 comes before authentication', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions/current' }), 405, 'METHOD_NOT_ALLOWED')
    assertError(await app.inject({ method: 'PATCH', url: '/v1/users/1', headers: { authorization: 'Bearer nonsense' } }), 405, 'METHOD_NOT_ALLOWED')
  })
})

describe('paths the router cannot read', () => {
  test('bad percent-encoding is 400 VALIDATION_ERROR on the field path, in the API\'s error body', async () => {
    for (const url of ['/v1/users/%E0%A4%A', '/v1/users/%zz', '/nowhere/%', '/v1/users/%C0%AF']) {
      const res = await app.inject({ method: 'GET', url })
      assertError(res, 400, 'VALIDATION_ERROR', ['path'])
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    }
  })

  test('a very long id is 400 on the field id, not the router\'s 414', async () => {
    for (const id of ['9'.repeat(300), '1'.repeat(5000)]) {
      assertError(await app.inject({ method: 'GET', url: `/v1/users/${id}` }), 400, 'VALIDATION_ERROR', ['id'])
    }
  })
})
