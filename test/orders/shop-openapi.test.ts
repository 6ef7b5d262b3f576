import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp } from '../helper.js'

// The OpenAPI document describes every shop operation completely: tags, security, the codes
// each can answer (grouped by status), and the headers a client may send.

const { app, close } = await buildTestApp()
after(close)
const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()

function codesOf (path: string, method: string): Record<string, string[]> {
  const operation = doc.paths[path][method]
  const out: Record<string, string[]> = {}
  for (const [status, listed] of Object.entries<any>(operation.responses)) {
    // A response shared by several operations is a reference to components.responses.
    const response = typeof listed.$ref === 'string' ? doc.components.responses[listed.$ref.split('/').pop()] : listed
    const schema = response.content?.['application/json']?.schema
    const codes = schema?.$ref === '#/components/schemas/ValidationProblem' ? ['VALIDATION_ERROR'] : schema?.allOf?.[1]?.properties?.code?.enum
    if (codes !== undefined) out[status] = [...codes].sort()
  }
  return out
}

const ALWAYS = { 429: ['TOO_MANY_REQUESTS'], 500: ['INTERNAL_SERVER_ERROR'], 503: ['SERVICE_UNAVAILABLE'] }
const BODY = ['MALFORMED_JSON', 'VALIDATION_ERROR']

// The scope an API key needs (undefined: a public operation).
const expected: Array<[string, string, string, string | undefined, Record<string, string[]>]> = [
  ['/v1/products', 'post', 'products', 'products:write', { 400: BODY, 401: ['AUTHENTICATION_REQUIRED'], 403: ['ACCESS_DENIED', 'INSUFFICIENT_SCOPE'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'], ...ALWAYS }],
  ['/v1/products', 'get', 'products', undefined, { 400: ['CURSOR_MISMATCH', 'VALIDATION_ERROR'], ...ALWAYS }],
  ['/v1/products/{id}', 'get', 'products', undefined, { 400: ['VALIDATION_ERROR'], 404: ['PRODUCT_NOT_FOUND'], ...ALWAYS }],
  ['/v1/products/{id}', 'patch', 'products', 'products:write', {
    400: BODY, 401: ['AUTHENTICATION_REQUIRED'], 403: ['ACCESS_DENIED', 'INSUFFICIENT_SCOPE'], 404: ['PRODUCT_NOT_FOUND'], 412: ['PRECONDITION_FAILED'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'], ...ALWAYS
  }],
  ['/v1/orders', 'post', 'orders', 'orders:write', {
    400: BODY, 401: ['AUTHENTICATION_REQUIRED'], 403: ['INSUFFICIENT_SCOPE'], 404: ['PRODUCT_NOT_FOUND'], 409: ['IDEMPOTENCY_KEY_IN_USE', 'NOT_ENOUGH_STOCK', 'PRODUCT_NOT_ON_SALE'],
    413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'], 422: ['IDEMPOTENCY_KEY_REUSED'], ...ALWAYS
  }],
  ['/v1/orders/{id}', 'get', 'orders', 'orders:read', { 400: ['VALIDATION_ERROR'], 401: ['AUTHENTICATION_REQUIRED'], 403: ['INSUFFICIENT_SCOPE'], 404: ['ORDER_NOT_FOUND'], ...ALWAYS }],
  ['/v1/orders/{id}', 'patch', 'orders', 'orders:write', {
    400: BODY, 401: ['AUTHENTICATION_REQUIRED'], 403: ['ACCESS_DENIED', 'INSUFFICIENT_SCOPE'], 404: ['ORDER_NOT_FOUND'], 409: ['ORDER_CANNOT_CANCEL', 'ORDER_CANNOT_SHIP'],
    412: ['PRECONDITION_FAILED'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'], ...ALWAYS
  }],
  ['/v1/orders', 'get', 'orders', 'orders:read', { 400: ['CURSOR_MISMATCH', 'VALIDATION_ERROR'], 401: ['AUTHENTICATION_REQUIRED'], 403: ['INSUFFICIENT_SCOPE'], ...ALWAYS }],
  ['/v1/users/{id}/orders', 'get', 'orders', 'orders:read', { 400: ['CURSOR_MISMATCH', 'VALIDATION_ERROR'], 401: ['AUTHENTICATION_REQUIRED'], 403: ['ACCESS_DENIED', 'INSUFFICIENT_SCOPE'], 404: ['USER_NOT_FOUND'], ...ALWAYS }]
]

describe('OpenAPI: the shop operations', () => {
  for (const [path, method, tag, scope, codes] of expected) {
    test(`${method.toUpperCase()} ${path}: tag, security and exactly its error codes`, () => {
      const operation = doc.paths[path]?.[method]
      assert.ok(operation, `${method} ${path} is documented`)
      assert.deepEqual(operation.tags, [tag])
      assert.deepEqual(operation.security, scope !== undefined ? [{ bearerAuth: [] }, { apiKey: [scope] }] : [])
      assert.deepEqual(codesOf(path, method), codes)
    })
  }

  test('the request headers: Idempotency-Key on POST /v1/orders, If-Match on the PATCHes', () => {
    const headerNames = (path: string, method: string) =>
      (doc.paths[path][method].parameters ?? []).filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name)
    assert.ok(headerNames('/v1/orders', 'post').includes('idempotency-key'))
    assert.ok(headerNames('/v1/orders/{id}', 'patch').includes('if-match'))
    assert.ok(headerNames('/v1/products/{id}', 'patch').includes('if-match'))
  })

  test('the success responses document Location, ETag, Link and Idempotent-Replayed', () => {
    const common = ['RateLimit', 'RateLimit-Policy', 'X-Request-Id']
    assert.deepEqual(Object.keys(doc.paths['/v1/orders'].post.responses['201'].headers).sort(), ['ETag', 'Idempotent-Replayed', 'Location', ...common].sort())
    assert.deepEqual(doc.paths['/v1/orders'].post.responses['201'].headers.Location, { $ref: '#/components/headers/Location' })
    assert.ok(doc.paths['/v1/products'].post.responses['201'].headers.Location)
    assert.ok(doc.paths['/v1/products'].get.responses['200'].headers.Link)
    assert.ok(doc.paths['/v1/orders/{id}'].get.responses['200'].headers.ETag)
    assert.ok(doc.components.headers['Retry-After'])
    assert.ok(doc.paths['/v1/orders/{id}'].get.responses['304'])
  })
})
