import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { catalogue } from '../../src/http/errors.js'
import { eventSchemaName } from '../../src/events/event.schemas.js'
import { EVENT_TYPES } from '../../src/events/event.types.js'
import { buildTestApp } from '../helper.js'

// GET /openapi.json: OpenAPI 3.1, generated from the routes, so it holds every route of the app;
// each operation has a stable operationId and lists the error codes it can return, by status,
// and every listed code is in the catalogue with that status.

const { app, close } = await buildTestApp()
after(close)
const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()

/** The app's routes as `METHOD /path/{param}`, read from Fastify's own route tree. */
function appRoutes (): Set<string> {
  const routes = new Set<string>()
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (match === null) continue
    const depth = match[1]!.length / 4
    stack.length = depth
    stack.push(match[2]!)
    const path = stack.join('')
    for (const method of (match[3] ?? '').split(', ').filter((m) => m !== '' && m !== 'HEAD')) {
      routes.add(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`)
    }
  }
  return routes
}

type Operation = { responses: Record<string, any>, parameters?: Array<{ in: string }>, requestBody?: unknown, security?: unknown[] }
const operations: Array<[string, Operation]> = Object.entries<Record<string, Operation>>(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Operation]))

/** A response, its `$ref` to components.responses resolved. */
function resolved (response: any): any {
  return typeof response.$ref === 'string' ? doc.components.responses[response.$ref.split('/').pop()] : response
}

/** The codes an error response's schema allows: the problem narrowed by an enum, or ValidationProblem. */
function codesOf (schema: any): string[] | undefined {
  if (schema?.$ref === '#/components/schemas/ValidationProblem') return ['VALIDATION_ERROR']
  if (schema?.allOf?.[0]?.$ref === '#/components/schemas/Problem') return schema.allOf[1]?.properties?.code?.enum
  return undefined
}

/** The codes an operation documents, by status. */
function documentedCodes (op: Operation): Map<number, string[]> {
  const byStatus = new Map<number, string[]>()
  for (const [status, response] of Object.entries(op.responses)) {
    if (Number(status) < 400) continue
    byStatus.set(Number(status), codesOf(resolved(response).content?.['application/json']?.schema)!)
  }
  return byStatus
}

describe('OpenAPI document', () => {
  test('is OpenAPI 3.1.0 with a title, a license, the bearer scheme required at the root', () => {
    assert.equal(doc.openapi, '3.1.0')
    assert.equal(typeof doc.info.title, 'string')
    assert.equal(doc.info.license.identifier, 'MIT')
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer')
    assert.deepEqual(doc.security, [{ bearerAuth: [] }])
  })

  test('every operation has its stable operationId', () => {
    const ids = Object.fromEntries(operations.map(([name, op]) => [name, (op as { operationId?: string }).operationId]))
    assert.deepEqual(ids, {
      'GET /': 'getServiceIndex',
      'GET /health/live': 'getLiveness',
      'GET /health/ready': 'getReadiness',
      'GET /errors': 'listErrors',
      'GET /errors/{code}': 'getError',
      ...(ids['GET /metrics'] === undefined ? {} : { 'GET /metrics': 'getMetrics' }),
      'POST /v1/users': 'createUser',
      'GET /v1/users': 'listUsers',
      'DELETE /v1/users/{id}/sessions': 'deleteUserSessions',
      'GET /v1/system': 'getSystem',
      'GET /v1/users/{id}': 'getUser',
      'PUT /v1/users/{id}': 'replaceUser',
      'DELETE /v1/users/{id}': 'deleteUser',
      'GET /v1/users/{id}/profile': 'getUserProfile',
      'GET /v1/users/{id}/orders': 'listUserOrders',
      'PUT /v1/users/{id}/password': 'changePassword',
      'POST /v1/email-verification-tokens': 'requestEmailVerification',
      'POST /v1/email-verifications': 'verifyEmail',
      'POST /v1/password-reset-tokens': 'requestPasswordReset',
      'POST /v1/password-resets': 'resetPassword',
      'POST /v1/sessions': 'createSession',
      'POST /v1/sessions/current/reauthentication': 'reauthenticate',
      'GET /v1/sessions/current': 'getCurrentSession',
      'DELETE /v1/sessions/current': 'deleteCurrentSession',
      'GET /v1/posts': 'listPosts',
      'GET /v1/posts/{id}': 'getPost',
      'POST /v1/posts': 'createPost',
      'PUT /v1/posts/{id}': 'replacePost',
      'PATCH /v1/posts/{id}': 'updatePost',
      'DELETE /v1/posts/{id}': 'deletePost',
      'POST /v1/posts/{id}/views': 'countPostView',
      'POST /v1/posts/{id}/images': 'addPostImage',
      'DELETE /v1/posts/{id}/images/{imageId}': 'removePostImage',
      'POST /v1/products/{id}/images': 'addProductImage',
      'DELETE /v1/products/{id}/images/{imageId}': 'removeProductImage',
      'PUT /v1/users/{id}/avatar': 'putUserAvatar',
      'DELETE /v1/users/{id}/avatar': 'removeUserAvatar',
      'GET /v1/files/{fileId}': 'getFile',
      'GET /v1/files/{fileId}/{variant}': 'getFileVariant',
      'GET /v1/products': 'listProducts',
      'GET /v1/products/{id}': 'getProduct',
      'POST /v1/products': 'createProduct',
      'PATCH /v1/products/{id}': 'updateProduct',
      'POST /v1/orders': 'createOrder',
      'GET /v1/orders': 'listOrders',
      'GET /v1/orders/{id}': 'getOrder',
      'PATCH /v1/orders/{id}': 'updateOrder',
      'GET /v1/events': 'listEvents',
      'POST /v1/events/stream-tickets': 'createStreamTicket',
      'POST /v1/webhook-endpoints': 'createWebhookEndpoint',
      'GET /v1/webhook-endpoints': 'listWebhookEndpoints',
      'GET /v1/webhook-endpoints/{id}': 'getWebhookEndpoint',
      'PATCH /v1/webhook-endpoints/{id}': 'updateWebhookEndpoint',
      'DELETE /v1/webhook-endpoints/{id}': 'deleteWebhookEndpoint',
      'POST /v1/webhook-endpoints/{id}/rotate-secret': 'rotateWebhookEndpointSecret',
      'POST /v1/webhook-endpoints/{id}/ping': 'pingWebhookEndpoint',
      'GET /v1/webhook-endpoints/{id}/deliveries': 'listWebhookDeliveries',
      'GET /v1/webhook-endpoints/{id}/deliveries/{deliveryId}': 'getWebhookDelivery',
      'POST /v1/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver': 'redeliverWebhookDelivery',
      'POST /v1/api-keys': 'createApiKey',
      'GET /v1/api-keys': 'listApiKeys',
      'GET /v1/api-keys/{id}': 'getApiKey',
      'DELETE /v1/api-keys/{id}': 'revokeApiKey',
      'POST /v1/oidc-authorizations': 'createOidcAuthorization',
      'GET /v1/users/{id}/identities': 'listIdentities',
      'DELETE /v1/users/{id}/identities/{provider}': 'deleteIdentity',
      'POST /v1/users/{id}/totp': 'enrolTotp',
      'PUT /v1/users/{id}/totp': 'activateTotp',
      'DELETE /v1/users/{id}/totp': 'deleteTotp'
    })
  })

  test('every event type is a named schema and a request of the webhooks section', () => {
    for (const type of [...EVENT_TYPES, 'webhook.ping']) {
      const name = eventSchemaName(type)
      assert.ok(doc.components.schemas[name] !== undefined, name)
      assert.deepEqual(doc.webhooks[type].post.requestBody.content['application/json'].schema, { $ref: `#/components/schemas/${name}` })
      assert.deepEqual(doc.webhooks[type].post.parameters.map((p: { name: string }) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    }
    assert.equal(Object.keys(doc.webhooks).length, EVENT_TYPES.length + 1)
  })

  test('representations are named components that operations reference', () => {
    for (const name of ['User', 'UserPrivate', 'Session', 'CurrentSession', 'Profile', 'Post', 'Product', 'Order', 'Problem', 'ValidationProblem', 'ErrorEntry']) {
      assert.ok(doc.components.schemas[name] !== undefined, name)
    }
    const [, getPost] = operations.find(([name]) => name === 'GET /v1/posts/{id}')!
    assert.deepEqual(getPost.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Post' })
    assert.ok(!JSON.stringify(doc).includes('x-require-one-of'), 'no vendor keyword where JSON Schema says it')
  })

  test('every PATCH accepts JSON and JSON merge patch', () => {
    for (const [name, op] of operations.filter(([name]) => name.startsWith('PATCH '))) {
      assert.deepEqual(Object.keys((op.requestBody as { content: object }).content).sort(), ['application/json', 'application/merge-patch+json'], name)
    }
  })

  test('public operations say so (security: []); the others need the bearer token', () => {
    const publicOps = operations.filter(([, op]) => Array.isArray(op.security) && op.security.length === 0).map(([name]) => name)
    for (const name of ['POST /v1/users', 'GET /v1/users/{id}', 'POST /v1/sessions', 'GET /v1/posts', 'GET /v1/posts/{id}', 'POST /v1/posts/{id}/views', 'GET /v1/products', 'GET /errors']) {
      assert.ok(publicOps.includes(name), name)
    }
    for (const name of ['GET /v1/sessions/current', 'POST /v1/posts', 'PATCH /v1/orders/{id}', 'POST /v1/products']) {
      assert.ok(!publicOps.includes(name), name)
    }
  })

  test('the route tree was read (sanity check of the parser above)', () => {
    const routes = appRoutes()
    for (const route of ['POST /v1/users', 'GET /v1/users/{id}', 'PUT /v1/users/{id}/password', 'DELETE /v1/sessions/current', 'GET /health/ready']) {
      assert.ok(routes.has(route), route)
    }
  })

  test('holds every route of the app under /v1, and nothing else there', () => {
    const v1 = [...appRoutes()].filter((r) => r.split(' ')[1]!.startsWith('/v1/')).sort()
    const documented = operations.map(([name]) => name).filter((r) => r.split(' ')[1]!.startsWith('/v1/')).sort()
    assert.deepEqual(documented, v1)
  })

  test('holds the service routes outside /v1', () => {
    for (const route of ['GET /', 'GET /health/live', 'GET /health/ready', 'GET /errors', 'GET /errors/{code}']) {
      assert.ok(operations.some(([name]) => name === route), route)
    }
  })

  test('every operation documents error responses whose schema enumerates its codes', () => {
    for (const [name, op] of operations) {
      const byStatus = documentedCodes(op)
      assert.ok(byStatus.size > 0, `${name} documents no error response`)
      for (const [status, codes] of byStatus) {
        assert.ok(Array.isArray(codes) && codes.length > 0, `${name} ${status}: no code enum`)
      }
    }
  })

  test('every documented code is in the catalogue, under its own status', () => {
    for (const [name, op] of operations) {
      for (const [status, codes] of documentedCodes(op)) {
        for (const code of codes) {
          assert.ok(Object.hasOwn(catalogue, code), `${name}: ${code} is not in the catalogue`)
          assert.equal(catalogue[code as keyof typeof catalogue].status, status, `${name}: ${code} under ${status}`)
        }
      }
    }
  })

  test('every operation lists 500 and 503; those with a path id, a body or a token list what those bring', () => {
    const missing: string[] = []
    for (const [name, op] of operations) {
      const codes = new Set([...documentedCodes(op).values()].flat())
      // File reads are outside the rate limit, as health is; a file body is no JSON to be malformed.
      const limited = !(name.startsWith('GET /health/') || name === 'GET /metrics' || name.startsWith('GET /v1/files/'))
      const expected = ['INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE', ...(limited ? ['TOO_MANY_REQUESTS'] : [])]
      if (name.includes('{id}') || name.includes('{fileId}')) expected.push('VALIDATION_ERROR')
      if (op.requestBody !== undefined) expected.push('VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
      if ((op.requestBody as { content?: Record<string, unknown> } | undefined)?.content?.['application/json'] !== undefined) expected.push('MALFORMED_JSON')
      if (op.security === undefined || op.security.length > 0) expected.push('AUTHENTICATION_REQUIRED', 'INSUFFICIENT_SCOPE')
      for (const code of expected) if (!codes.has(code)) missing.push(`${name}: ${code}`)
    }
    assert.deepEqual(missing, [])
  })

  test('error responses describe the problem body, errors[] included', () => {
    const problem = doc.components.schemas.Problem
    assert.deepEqual([...problem.required].sort(), ['code', 'message', 'requestId', 'status', 'title', 'type'])
    assert.equal(problem.properties.errors.type, 'array')
    const validation = doc.components.schemas.ValidationProblem
    assert.deepEqual([...validation.required].sort(), ['code', 'errors', 'message', 'requestId', 'status', 'title', 'type'])
    assert.deepEqual([...doc.components.schemas.FieldError.required].sort(), ['field', 'message'])
  })

  test('every error response is offered as application/json and application/problem+json', () => {
    for (const [name, op] of operations) {
      for (const [status, response] of Object.entries(op.responses).map(([s, r]) => [s, resolved(r)])) {
        if (Number(status) < 400) continue
        assert.deepEqual(Object.keys(response.content).sort(), ['application/json', 'application/problem+json'], `${name} ${status}`)
        assert.deepEqual(response.content['application/problem+json'].schema, response.content['application/json'].schema)
      }
    }
  })
})
