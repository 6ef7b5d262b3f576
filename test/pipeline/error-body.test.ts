import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// The shape of every error body (docs/api.md): {type, title, status, code, message,
// requestId}, plus errors[] for VALIDATION_ERROR only, as application/json, or as
// application/problem+json when the Accept header asks for it.

const { app, close } = await buildTestApp()
after(close)
const user = await createUser(app)

const PROBLEM_KEYS = ['code', 'message', 'requestId', 'status', 'title', 'type']
const JSON_TYPE = 'application/json; charset=utf-8'
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

// One request per kind of error the shared layer produces.
const errorRequests = {
  notFound: { method: 'GET', url: '/no/such/route' },
  methodNotAllowed: { method: 'PATCH', url: '/v1/users/1' },
  unauthenticated: { method: 'DELETE', url: '/v1/sessions/current' },
  unsupportedMediaType: { method: 'POST', url: '/v1/users', headers: { 'content-type': 'text/plain' }, payload: 'hello' },
  malformedJson: { method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json' }, payload: '{x' },
  validation: { method: 'GET', url: '/v1/users/abc' },
  userNotFound: { method: 'GET', url: '/v1/users/9223372036854775807' }
} as const

describe('error bodies', () => {
  test('each has exactly {type, title, status, code, message, requestId} as application/json', async () => {
    for (const [name, request] of Object.entries(errorRequests)) {
      const res = await app.inject({ ...request, headers: { ...('headers' in request ? request.headers : {}) } })
      const body = res.json()
      const expectedKeys = body.code === 'VALIDATION_ERROR' ? [...PROBLEM_KEYS, 'errors'].sort() : PROBLEM_KEYS
      assert.deepEqual(Object.keys(body).sort(), expectedKeys, name)
      assert.equal(res.headers['content-type'], JSON_TYPE, name)
      assert.equal(body.type, `/errors/${body.code}`, name)
      assert.equal(body.status, res.statusCode, name)
      assert.equal(body.requestId, res.headers['x-request-id'], name)
      assert.ok(body.message.length > 0, name)
    }
  })

  test('VALIDATION_ERROR: errors[] entries are exactly {field, message}', async () => {
    const res = await app.inject({ method: 'PUT', url: '/v1/users/abc', headers: user.auth, payload: { email: 'nope', name: '', extra: 1 } })
    assertError(res, 400, 'VALIDATION_ERROR', ['id', 'email', 'name', 'extra'])
    for (const entry of res.json().errors) {
      assert.deepEqual(Object.keys(entry).sort(), ['field', 'message'])
      assert.equal(typeof entry.message, 'string')
      assert.ok(entry.message.length > 0)
    }
  })

  test('the type URI of an error resolves to its catalogue entry', async () => {
    for (const request of Object.values(errorRequests)) {
      const body = (await app.inject({ ...request, headers: { ...('headers' in request ? request.headers : {}) } })).json()
      const entry = await app.inject({ method: 'GET', url: body.type })
      assert.equal(entry.statusCode, 200)
      const { message, description, retryable } = entry.json()
      assert.deepEqual(entry.json(), { code: body.code, status: body.status, title: body.title, message, description, retryable })
    }
  })

  test('the title is the same for one code whatever the message', async () => {
    const route = (await app.inject({ method: 'GET', url: '/no/such/route' })).json()
    const code = (await app.inject({ method: 'GET', url: '/errors/NO_SUCH_CODE' })).json()
    assert.equal(route.code, 'NOT_FOUND')
    assert.equal(code.code, 'NOT_FOUND')
    assert.notEqual(route.message, code.message)
    assert.equal(route.title, code.title)
  })
})

describe('media type of error bodies', () => {
  const withAccept = (accept: string) => app.inject({ method: 'GET', url: '/v1/users/abc', headers: { accept } })

  test('Accept: application/problem+json gives application/problem+json, same body', async () => {
    const plain = await app.inject({ method: 'GET', url: '/v1/users/abc' })
    const problem = await withAccept('application/problem+json')
    assertError(problem, 400, 'VALIDATION_ERROR', ['id'])
    assert.equal(problem.headers['content-type'], PROBLEM_TYPE)
    const withoutId = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([key]) => key !== 'requestId'))
    assert.deepEqual(withoutId(plain.json()), withoutId(problem.json()))
  })

  test('problem+json for every kind of error, 404 and 405 included', async () => {
    for (const [name, request] of Object.entries(errorRequests)) {
      const res = await app.inject({ ...request, headers: { ...('headers' in request ? request.headers : {}), accept: 'application/problem+json' } })
      assert.equal(res.headers['content-type'], PROBLEM_TYPE, name)
      assert.ok(res.statusCode >= 400, name)
    }
  })

  test('Accept listing both, or problem+json ranked higher, gives problem+json', async () => {
    for (const accept of ['application/json, application/problem+json', 'application/json;q=0.5, application/problem+json', 'APPLICATION/PROBLEM+JSON']) {
      assert.equal((await withAccept(accept)).headers['content-type'], PROBLEM_TYPE, accept)
    }
  })

  test('no Accept, */*, application/json, problem+json;q=0 or ranked lower, or text/html give application/json', async () => {
    const accepts = ['*/*', 'application/json', 'application/problem+json;q=0', 'application/problem+json;q=0.2, application/json', 'text/html']
    for (const accept of accepts) {
      const res = await withAccept(accept)
      assertError(res, 400, 'VALIDATION_ERROR', ['id'])
      assert.equal(res.headers['content-type'], JSON_TYPE, accept)
    }
    assert.equal((await app.inject({ method: 'GET', url: '/v1/users/abc' })).headers['content-type'], JSON_TYPE)
  })

  test('a success is application/json whatever the Accept', async () => {
    const res = await app.inject({ method: 'GET', url: `/v1/users/${user.id}`, headers: { accept: 'application/problem+json' } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], JSON_TYPE)
  })
})
