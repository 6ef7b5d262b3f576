import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'

// JSON syntax and encoding: MALFORMED_JSON for what is not JSON; and, so that nothing is lost
// silently, for a body that is not UTF-8 or that names a member twice (I-JSON, RFC 7493). A
// leading byte order mark is ignored (RFC 8259 section 8.1 allows it).

const { app, close } = await buildTestApp()
after(close)
const me = await createUser(app)
const json = { 'content-type': 'application/json' }

const put = (payload: string | Buffer) => app.inject({ method: 'PUT', url: `/v1/users/${me.id}`, headers: { ...me.auth, ...json }, payload })
const read = async () => (await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })).json()
const email = JSON.stringify(me.email)

describe('MALFORMED_JSON', () => {
  test('truncated, unquoted, single-quoted, trailing commas, comments, NaN, raw control characters', async () => {
    const bad = ['{x', '{', '{"email":', `{"email":${email},"name":"x"`, '{"name":"x"}}', "{'name':'x'}", '{"name":"x",}',
      '{"name":"x"} // c', '{/* c */}', 'NaN', 'Infinity', 'undefined', '{"name":"a\u0000b"}', '{"name":"a\nb"}', '{"name":"\\x41"}', '{"name":"\\ud8"}', '\u0000']
    for (const payload of bad) {
      const res = await put(payload)
      assertError(res, 400, 'MALFORMED_JSON')
      assert.equal(res.json().message, 'The request body is not valid JSON.')
    }
  })
})

describe('duplicate member names', () => {
  test('are MALFORMED_JSON naming the member, and nothing changes', async () => {
    const before = await read()
    const res = await put(`{"email":${email},"name":"First","name":"Second"}`)
    assertError(res, 400, 'MALFORMED_JSON')
    assert.match(res.json().message, /"name"/)
    assert.deepEqual(await read(), before)
  })

  test('the same name spelled with an escape is the same name', async () => {
    assertError(await put(`{"email":${email},"name":"A","n\\u0061me":"B"}`), 400, 'MALFORMED_JSON')
  })

  test('at any depth, in unknown or read-only members too', async () => {
    assertError(await put(`{"email":${email},"name":"A","id":{"x":1,"x":2}}`), 400, 'MALFORMED_JSON')
    assertError(await put(`{"email":${email},"name":"A","extra":[[{"k":{"a":1,"a":1}}]]}`), 400, 'MALFORMED_JSON')
  })

  test('the same name in sibling objects, or in string content, is not a duplicate', async () => {
    assertError(await put(`{"email":${email},"name":"A","extra":[{"k":1},{"k":1}]}`), 400, 'VALIDATION_ERROR', ['extra'])
    const res = await put(`{"email":${email},"name":"\\"name\\":","id":{"name":1}}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().name, '"name":')
  })
})

describe('byte order mark and encoding', () => {
  test('a UTF-8 byte order mark before the body is ignored', async () => {
    const res = await put(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"email":${email},"name":"Bom"}`)]))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await read()).name, 'Bom')
  })

  test('a byte order mark alone is an empty body; one inside the body is MALFORMED_JSON', async () => {
    assertError(await put(Buffer.from([0xef, 0xbb, 0xbf])), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put(`{"email":${email},\uFEFF"name":"x"}`), 400, 'MALFORMED_JSON')
  })

  test('bytes that are not UTF-8 are MALFORMED_JSON, not stored as U+FFFD', async () => {
    const invalid = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xe2, 0x82]] // stray, truncated, surrogate, overlong
    for (const bytes of invalid) {
      const body = Buffer.concat([Buffer.from(`{"email":${email},"name":"a`), Buffer.from(bytes), Buffer.from('"}')])
      const res = await put(body)
      assertError(res, 400, 'MALFORMED_JSON')
      assert.match(res.json().message, /UTF-8/)
    }
    assert.notEqual((await read()).name, 'a\uFFFD')
  })

  test('a UTF-16 body is refused', async () => {
    const utf16 = Buffer.from(`\uFEFF{"email":${email},"name":"Wide"}`, 'utf16le')
    assertError(await put(utf16), 400, 'MALFORMED_JSON')
  })
})

describe('content types', () => {
  const signUp = (contentType: string | undefined, payload = '{}') =>
    app.inject({ method: 'POST', url: '/v1/users', headers: contentType === undefined ? {} : { 'content-type': contentType }, payload })

  test('application/json with a charset, any case, is accepted', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'APPLICATION/JSON', 'Application/Json; Charset="utf-8"']) {
      assertError(await signUp(type), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
    }
    const created = await signUp('application/json; charset=utf-8', JSON.stringify({ email: `cs.${me.email}`, password: 'long enough', name: 'Charset' }))
    assert.equal(created.statusCode, 201, created.body)
  })

  test('anything else with a body is 415', async () => {
    const types = ['text/plain', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx',
      'application/json-patch+json', 'application/vnd.api+json', 'application/xml', 'application/octet-stream']
    for (const type of types) assertError(await signUp(type), 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a body with no content type is 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/users', payload: Buffer.from('{}') })
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a compressed body (Content-Encoding) is 415, before its bytes are read', async () => {
    for (const encoding of ['gzip', 'deflate', 'br', 'GZIP']) {
      const res = await app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, payload: '{x' })
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
    }
    const identity = await app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, payload: '{}' })
    assertError(identity, 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
  })

  test('application/merge-patch+json on POST or PUT is 415', async () => {
    const body = JSON.stringify({ email: `mp.${me.email}`, password: 'long enough', name: 'Merge' })
    assertError(await signUp('application/merge-patch+json', body), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await signUp('application/merge-patch+json; charset=utf-8', '{x'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    const res = await app.inject({ method: 'PUT', url: `/v1/users/${me.id}`, headers: { ...me.auth, 'content-type': 'application/merge-patch+json' }, payload: `{"email":${email},"name":"M"}` })
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })
})
