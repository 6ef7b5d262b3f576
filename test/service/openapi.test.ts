import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { catalogue } from '../../src/http/errors.js'
import { buildTestApp } from '../helper.js'

// GET /openapi.json (contract sections 1 and 7): OpenAPI 3.1, generated from the routes, so it
// holds every route of the app; each operation lists the error codes it can return, by status,
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

/** The codes an operation documents, by status. */
function documentedCodes (op: Operation): Map<number, string[]> {
  const byStatus = new Map<number, string[]>()
  for (const [status, response] of Object.entries(op.responses)) {
    if (Number(status) < 400) continue
    const codes = response.content?.['application/json']?.schema?.properties?.code?.enum
    byStatus.set(Number(status), codes)
  }
  return byStatus
}

describe('OpenAPI document', () => {
  test('is OpenAPI 3.1.0 with a title and the bearer scheme', () => {
    assert.equal(doc.openapi, '3.1.0')
    assert.equal(typeof doc.info.title, 'string')
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer')
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
      const expected = ['INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']
      if (name.includes('{id}')) expected.push('VALIDATION_ERROR')
      if (op.requestBody !== undefined) expected.push('VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
      if (op.security !== undefined && op.security.length > 0) expected.push('AUTHENTICATION_REQUIRED')
      for (const code of expected) if (!codes.has(code)) missing.push(`${name}: ${code}`)
    }
    assert.deepEqual(missing, [])
  })

  test('error responses describe the problem body, errors[] included', () => {
    const [, op] = operations.find(([name]) => name === 'PUT /v1/users/{id}')!
    const schema = op.responses['400'].content['application/json'].schema
    assert.deepEqual([...schema.required].sort(), ['code', 'message', 'requestId', 'status', 'title', 'type'])
    assert.equal(schema.properties.errors.type, 'array')
    assert.deepEqual([...schema.properties.errors.items.required].sort(), ['field', 'message'])
  })

  test('every error response is offered as application/json and application/problem+json', () => {
    for (const [name, op] of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue
        assert.deepEqual(Object.keys(response.content).sort(), ['application/json', 'application/problem+json'], `${name} ${status}`)
        assert.deepEqual(response.content['application/problem+json'].schema, response.content['application/json'].schema)
      }
    }
  })
})
