import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// What the JSON parser and validation make of bodies that are absent, empty, not an object,
// huge or deeply nested (docs/api.md): always a 400 (or 413), never a 500.

const { app, close } = await buildTestApp()
after(close)
const me = await createUser(app)
const json = { 'content-type': 'application/json' }

const put = (payload?: string, headers: Record<string, string> = json) =>
  app.inject({ method: 'PUT', url: `/v1/users/${me.id}`, headers: { ...me.auth, ...headers }, ...(payload !== undefined ? { payload } : {}) })
const signUp = (payload?: string, headers: Record<string, string> = json) =>
  app.inject({ method: 'POST', url: '/v1/users', headers, ...(payload !== undefined ? { payload } : {}) })
const logIn = (payload?: string) => app.inject({ method: 'POST', url: '/v1/sessions', headers: json, ...(payload !== undefined ? { payload } : {}) })

const validMembers = () => `"email":${JSON.stringify(me.email)},"name":"Nested"`

describe('absent and empty bodies read as {}', () => {
  test('no body at all, no content type: every required field is named', async () => {
    assertError(await put(undefined, {}), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await signUp(undefined, {}), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions' }), 400, 'VALIDATION_ERROR', ['email', 'password'])
  })

  test('an empty or blank body with a JSON content type: the same', async () => {
    for (const payload of ['', ' ', '\r\n\t ']) {
      assertError(await put(payload), 400, 'VALIDATION_ERROR', ['email', 'name'])
      assertError(await signUp(payload), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
      assertError(await logIn(payload), 400, 'VALIDATION_ERROR', ['email', 'password'])
    }
  })

  test('{} names every required field too', async () => {
    assertError(await put('{}'), 400, 'VALIDATION_ERROR', ['email', 'name'])
  })
})

describe('a body that is not a JSON object', () => {
  test('is 400 VALIDATION_ERROR on the field body', async () => {
    for (const payload of ['[]', '[{"email":"a@b.c","name":"x"}]', '"x"', '5', '-0', 'null', 'true', 'false', '1e400', '""']) {
      assertError(await put(payload), 400, 'VALIDATION_ERROR', ['body'])
      assertError(await signUp(payload), 400, 'VALIDATION_ERROR', ['body'])
    }
  })
})

describe('huge numbers', () => {
  test('a number beyond double range in a string field fails that field', async () => {
    assertError(await put('{"email":1e400,"name":-1e400}'), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put(`{"email":${'9'.repeat(400)},"name":"x"}`), 400, 'VALIDATION_ERROR', ['email'])
  })

  test('in an unknown member: that member; in a read-only member: ignored', async () => {
    assertError(await put(`{${validMembers()},"size":1e400}`), 400, 'VALIDATION_ERROR', ['size'])
    const res = await put(`{${validMembers()},"id":1e400}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { id: me.id, email: me.email, name: 'Nested', emailVerified: false, pendingEmail: null })
  })
})

describe('deep nesting', () => {
  const deepArray = (n: number) => '['.repeat(n) + ']'.repeat(n)
  const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)

  test('nested up to 32 levels in all: judged field by field', async () => {
    // The body is level 1, so a member may hold 31 more.
    assertError(await put(`{${validMembers()},"deep":${deepArray(31)}}`), 400, 'VALIDATION_ERROR', ['deep'])
    assertError(await put(`{"email":${deepArray(31)},"name":${deepObject(30)}}`), 400, 'VALIDATION_ERROR', ['email', 'name'])
    const res = await put(`{${validMembers()},"id":${deepObject(31)}}`)
    assert.equal(res.statusCode, 200, res.body)
  })

  test('deeper than 32 levels anywhere, even in a read-only member: 400 on the field body', async () => {
    for (const payload of [`{${validMembers()},"deep":${deepArray(32)}}`, `{${validMembers()},"id":${deepObject(5_000)}}`, deepArray(100_000)]) {
      const res = await put(payload)
      assertError(res, 400, 'VALIDATION_ERROR', ['body'])
      assert.equal(res.json().errors[0].message, 'must not be nested more than 32 levels deep')
    }
  })

  test('judged before the whole text is read: an unclosed deep body is refused for its depth', async () => {
    assertError(await put('['.repeat(100_000)), 400, 'VALIDATION_ERROR', ['body'])
  })
})

describe('prototype members', () => {
  test('__proto__, constructor and prototype are unknown members, and nothing is polluted', async () => {
    const polluting = [
      [`{${validMembers()},"__proto__":{"polluted":"yes","role":"ADMIN"}}`, ['__proto__']],
      [`{${validMembers()},"constructor":{"prototype":{"polluted":"yes"}}}`, ['constructor']],
      [`{${validMembers()},"prototype":{"polluted":"yes"}}`, ['prototype']],
      ['{"__proto__":{"email":"x@example.com","name":"Proto"}}', ['__proto__', 'email', 'name']]
    ] as const
    for (const [payload, fields] of polluting) {
      assertError(await put(payload), 400, 'VALIDATION_ERROR', [...fields])
      assertError(await signUp(payload), 400, 'VALIDATION_ERROR', [...fields, 'password'])
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(({} as Record<string, unknown>).role, undefined)
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false)
    const read = await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })
    assert.deepEqual(Object.keys(read.json()).sort(), ['id', 'name'])
  })
})
