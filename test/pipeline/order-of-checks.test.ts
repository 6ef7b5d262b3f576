import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// Contract section 6 on an authenticated write, PUT /v1/users/{id}: route, then authentication
// (401), then the request's shape: content type (415), size (413), JSON syntax (MALFORMED_JSON),
// every field of path and body at once (VALIDATION_ERROR); then existence (404), permission
// (403), precondition (412).

const LIMIT = 1024
const { app, close } = await buildTestApp({ BODY_LIMIT_BYTES: String(LIMIT) })
after(close)
const [me, other] = [await createUser(app), await createUser(app)]

const json = { 'content-type': 'application/json' }
const text = { 'content-type': 'text/plain' }
const mergePatch = { 'content-type': 'application/merge-patch+json' }
const big = (prefix: string) => prefix + ' '.repeat(LIMIT + 10) // over the limit whatever it says
const valid = () => JSON.stringify({ email: me.email, name: 'Renamed' })

const put = (id: string | number, headers: Record<string, string>, payload?: string) =>
  app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers, ...(payload !== undefined ? { payload } : {}) })

describe('order of checks on PUT /v1/users/{id}', () => {
  test('401 comes before 415, 413, MALFORMED_JSON and VALIDATION_ERROR', async () => {
    const cases: Array<[Record<string, string>, string | undefined]> = [
      [text, 'hello'],
      [text, big('hello')],
      [json, big('{"name":"x"}')],
      [json, '{x'],
      [json, '{"email":5,"surprise":true}'],
      [mergePatch, '{}'],
      [json, undefined]
    ]
    for (const [headers, payload] of cases) {
      const auths: Array<Record<string, string>> = [{}, { authorization: 'Bearer not-a-real-token-0123456789' }, { authorization: 'Basic dXNlcjpwYXNz' }]
      for (const auth of auths) {
        for (const id of [me.id, 'abc']) {
          const res = await put(id, { ...headers, ...auth }, payload)
          assertError(res, 401, 'AUTHENTICATION_REQUIRED')
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="api"')
        }
      }
    }
  })

  test('415 comes before 413 and MALFORMED_JSON', async () => {
    assertError(await put(me.id, { ...me.auth, ...text }, big('hello')), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await put(me.id, { ...me.auth, ...text }, '{x'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await put('abc', { ...me.auth, ...text }, valid()), 415, 'UNSUPPORTED_MEDIA_TYPE')
    // JSON merge patch is a PATCH format: on PUT it is a 415 before the body is even read.
    assertError(await put(me.id, { ...me.auth, ...mergePatch }, big('{')), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await put(me.id, { ...me.auth, ...mergePatch }, '{x'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await put(me.id, { ...me.auth, ...mergePatch }, valid()), 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('413 comes before MALFORMED_JSON and VALIDATION_ERROR', async () => {
    assertError(await put(me.id, { ...me.auth, ...json }, big('{x')), 413, 'PAYLOAD_TOO_LARGE')
    assertError(await put('abc', { ...me.auth, ...json }, big('{"email":1}')), 413, 'PAYLOAD_TOO_LARGE')
    // A valid body that is too large is refused too: the limit is on bytes, not on content.
    const padded = JSON.stringify({ email: me.email, name: 'Ok' }) + ' '.repeat(LIMIT)
    assertError(await put(me.id, { ...me.auth, ...json }, padded), 413, 'PAYLOAD_TOO_LARGE')
  })

  test('a body of exactly the limit is read', async () => {
    const body = JSON.stringify({ email: me.email, name: 'AtLimit' })
    const res = await put(me.id, { ...me.auth, ...json }, body + ' '.repeat(LIMIT - Buffer.byteLength(body)))
    assert.equal(res.statusCode, 200, res.body)
  })

  test('MALFORMED_JSON comes before VALIDATION_ERROR, path included', async () => {
    for (const payload of ['{x', '{"email":"a@b.c","name":', '{', '{"name":"x"}}', "{'name':'x'}", '{"name":"x",}', 'NaN']) {
      assertError(await put('abc', { ...me.auth, ...json }, payload), 400, 'MALFORMED_JSON')
    }
  })

  test('VALIDATION_ERROR names the path and body fields together', async () => {
    assertError(await put('abc', { ...me.auth, ...json }, JSON.stringify({ email: 'not-an-email', name: '' })), 400, 'VALIDATION_ERROR', ['id', 'email', 'name'])
    assertError(await put('0', { ...me.auth, ...json }, JSON.stringify({ name: 'x'.repeat(21), role: 'ADMIN' })), 400, 'VALIDATION_ERROR', ['id', 'email', 'name', 'role'])
    assertError(await put('abc', { ...me.auth, ...json }, valid()), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await put('abc', me.auth), 400, 'VALIDATION_ERROR', ['id', 'email', 'name'])
  })

  test('VALIDATION_ERROR comes before existence, permission and precondition', async () => {
    const headers = { ...me.auth, ...json, 'if-match': '"stale"' }
    assertError(await put('9223372036854775807', headers, '{}'), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put(other.id, headers, '{}'), 400, 'VALIDATION_ERROR', ['email', 'name'])
  })

  test('then 404 before 403 before 412', async () => {
    const stale = { ...me.auth, ...json, 'if-match': '"stale"' }
    assertError(await put('9223372036854775807', stale, valid()), 404, 'USER_NOT_FOUND')
    assertError(await put(other.id, stale, valid()), 403, 'ACCESS_DENIED')
    assertError(await put(me.id, stale, valid()), 412, 'PRECONDITION_FAILED')
    const res = await put(me.id, { ...me.auth, ...json }, valid())
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { id: me.id, email: me.email, name: 'Renamed', emailVerified: false, pendingEmail: null })
  })
})
