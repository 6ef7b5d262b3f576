import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { errorHandler } from '../../src/pipeline/error-handler.js'
import { registerJsonBody } from '../../src/pipeline/json-body.js'
import { PageQuery } from '../../src/http/paging.js'
import { Id, IdParams, Text } from '../../src/http/schemas.js'
import { validation } from '../../src/pipeline/validation.js'
import { assertError, buildTestApp, createUser } from '../helper.js'

// No type coercion in bodies ("5" is not an integer, 1 is not a string, "true" is not a
// boolean); query values become numbers only when written as plain decimals. The users
// endpoints have only strings, so integers, booleans and body ids are checked on a bare app
// built from the shared HTTP layer with the shared schema blocks.

const { app, close } = await buildTestApp()
after(close)
const me = await createUser(app)

const bare = Fastify({ logger: false })
await bare.register(errorHandler)
registerJsonBody(bare)
await bare.register(validation)
bare.post('/things/:id', {
  schema: {
    params: IdParams,
    querystring: Type.Object(PageQuery, { additionalProperties: false }),
    body: Type.Object({
      count: Type.Integer({ minimum: 1, maximum: 10 }),
      ratio: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      flag: Type.Optional(Type.Boolean()),
      ref: Type.Optional(Id),
      label: Type.Optional(Text({ maxLength: 5 }))
    }, { additionalProperties: false })
  }
}, async (request) => ({ body: request.body, query: request.query }))
await bare.ready()
after(() => bare.close())

const thing = (body: unknown, query = '') =>
  bare.inject({ method: 'POST', url: `/things/1${query}`, headers: { 'content-type': 'application/json' }, payload: typeof body === 'string' ? body : JSON.stringify(body) })

describe('no coercion in bodies (users endpoints)', () => {
  test('numbers, booleans, arrays, objects and null are not strings', async () => {
    for (const value of [1, 0, true, false, ['x'], { x: 'y' }, null]) {
      const res = await app.inject({ method: 'PUT', url: `/v1/users/${me.id}`, headers: me.auth, payload: { email: value, name: value } as object })
      assertError(res, 400, 'VALIDATION_ERROR', ['email', 'name'])
    }
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: me.email, password: 12345678 } })
    assertError(login, 400, 'VALIDATION_ERROR', ['password'])
  })
})

describe('no coercion in bodies (shared layer)', () => {
  test('a valid body passes unchanged', async () => {
    const res = await thing({ count: 5, ratio: 0.5, flag: true, ref: 42, label: 'ok' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().body, { count: 5, ratio: 0.5, flag: true, ref: 42, label: 'ok' })
  })

  test('"5" is not an integer, "true" is not a boolean, 1 is not a string, "0.5" is not a number', async () => {
    assertError(await thing({ count: '5', ratio: '0.5', flag: 'true', ref: '42', label: 1 }), 400, 'VALIDATION_ERROR', ['count', 'ratio', 'flag', 'ref', 'label'])
    assertError(await thing({ count: 5.5, flag: 1, ref: 4.2 }), 400, 'VALIDATION_ERROR', ['count', 'flag', 'ref'])
    assertError(await thing({ count: true, flag: 'false', ref: null }), 400, 'VALIDATION_ERROR', ['count', 'flag', 'ref'])
    assertError(await thing({ count: [5], flag: [true] }), 400, 'VALIDATION_ERROR', ['count', 'flag'])
  })

  test('5.0 is the integer 5 in JSON', async () => {
    const res = await thing('{"count":5.0}')
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().body.count, 5)
  })

  test('huge numbers fail their field, never a 500', async () => {
    assertError(await thing('{"count":1e400,"ratio":-1e400,"ref":1e400}'), 400, 'VALIDATION_ERROR', ['count', 'ratio', 'ref'])
    assertError(await thing(`{"count":${'9'.repeat(400)}}`), 400, 'VALIDATION_ERROR', ['count'])
  })

  test('an id in a body beyond 2^53 is refused rather than rounded to another id', async () => {
    assertError(await thing('{"count":1,"ref":9007199254740993}'), 400, 'VALIDATION_ERROR', ['ref'])
    assertError(await thing('{"count":1,"ref":9223372036854775807}'), 400, 'VALIDATION_ERROR', ['ref'])
    assertError(await thing('{"count":1,"ref":0}'), 400, 'VALIDATION_ERROR', ['ref'])
    const safe = await thing('{"count":1,"ref":9007199254740991}')
    assert.equal(safe.statusCode, 200, safe.body)
    assert.equal(safe.json().body.ref, 9007199254740991)
  })
})

describe('query values', () => {
  test('a plain decimal limit becomes a number', async () => {
    for (const [query, limit] of [['?limit=5', 5], ['?limit=100', 100], ['?limit=1', 1], ['', undefined]] as const) {
      const res = await thing({ count: 1 }, query)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().query.limit, limit, query)
    }
  })

  test('anything else written for an integer fails the field', async () => {
    const bad = ['0x10', '1e1', '5.0', '%205', '5%20', '+5', '05', '', 'abc', 'true', 'Infinity', 'NaN', '0', '101', '-1', '99999999999999999999']
    for (const value of bad) {
      assertError(await thing({ count: 1 }, `?limit=${value}`), 400, 'VALIDATION_ERROR', ['limit'])
    }
    assertError(await thing({ count: 1 }, '?limit=5&limit=6'), 400, 'VALIDATION_ERROR', ['limit'])
  })

  test('path, query and body failures are reported together', async () => {
    const res = await bare.inject({ method: 'POST', url: '/things/01?limit=0x1&cursor=nope&other=1', headers: { 'content-type': 'application/json' }, payload: '{"count":"1","extra":true}' })
    assertError(res, 400, 'VALIDATION_ERROR', ['id', 'limit', 'cursor', 'other', 'count', 'extra'])
  })
})
