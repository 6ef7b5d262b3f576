import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { catalogue, errorCodes } from '../../src/http/errors.js'
import { assertError, buildTestApp } from '../helper.js'

// The catalogue: every code of the documented index (docs/api.md, Errors), with its status, a distinct
// stable title, a description and whether it is retryable, and GET /errors/CODE answering its entry.

// Copied by hand from the index of codes by status in docs/api.md, so that a change to either side shows up here.
const DOCUMENTED_TABLE: Record<string, number> = {
  VALIDATION_ERROR: 400,
  MALFORMED_JSON: 400,
  CURSOR_MISMATCH: 400,
  INVALID_TOKEN: 400,
  AUTHENTICATION_REQUIRED: 401,
  INVALID_CREDENTIALS: 401,
  ACCESS_DENIED: 403,
  EMAIL_NOT_VERIFIED: 403,
  FORBIDDEN_POST_ACCESS: 403,
  REAUTHENTICATION_REQUIRED: 403,
  INSUFFICIENT_SCOPE: 403,
  USER_NOT_FOUND: 404,
  POST_NOT_FOUND: 404,
  PRODUCT_NOT_FOUND: 404,
  ORDER_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  WEBHOOK_DELIVERY_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  NOT_FOUND: 404,
  EVENTS_EXPIRED: 410,
  RANGE_NOT_SATISFIABLE: 416,
  TOO_MANY_IMAGES: 409,
  METHOD_NOT_ALLOWED: 405,
  DUPLICATE_EMAIL: 409,
  PRODUCT_NOT_ON_SALE: 409,
  NOT_ENOUGH_STOCK: 409,
  ORDER_CANNOT_CANCEL: 409,
  ORDER_CANNOT_SHIP: 409,
  TOO_MANY_API_KEYS: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_KEY_IN_USE: 409,
  TOO_MANY_REQUESTS: 429,
  TOO_MANY_STREAMS: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  IDENTITY_NOT_FOUND: 404,
  LAST_SIGN_IN_METHOD: 409,
  MFA_REQUIRED: 401,
  INVALID_MFA_CODE: 401,
  MFA_ALREADY_ENABLED: 409,
  TOTP_NOT_FOUND: 404,
  // The HTTP layer's own answers, before a request reaches the app (test/pipeline/client-errors.test.ts).
  MALFORMED_REQUEST: 400,
  REQUEST_TIMEOUT: 408,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431
}

const { app, close } = await buildTestApp()
after(close)

describe('the error catalogue', () => {
  test('holds exactly the codes of the documented table, each with the table\'s status', () => {
    assert.deepEqual([...errorCodes].sort(), Object.keys(DOCUMENTED_TABLE).sort())
    for (const code of errorCodes) assert.equal(catalogue[code].status, DOCUMENTED_TABLE[code], code)
  })

  test('titles are distinct, messages non-empty; the 500 message is the documented one', () => {
    const titles = errorCodes.map((code) => catalogue[code].title)
    assert.equal(new Set(titles).size, titles.length)
    for (const code of errorCodes) {
      assert.ok(catalogue[code].title.trim().length > 0, code)
      assert.ok(catalogue[code].message.trim().length > 0, code)
    }
    assert.equal(catalogue.INTERNAL_SERVER_ERROR.message, 'An internal server error occurred.')
  })

  test('GET /errors lists every entry', async () => {
    const res = await app.inject({ method: 'GET', url: '/errors' })
    assert.equal(res.statusCode, 200)
    const entries = res.json() as Array<{ code: string, status: number, title: string, message: string }>
    assert.deepEqual(entries.map((e) => e.code).sort(), Object.keys(DOCUMENTED_TABLE).sort())
    for (const entry of entries) {
      assert.deepEqual(Object.keys(entry).sort(), ['code', 'description', 'message', 'retryable', 'status', 'title'])
      assert.equal(entry.status, DOCUMENTED_TABLE[entry.code], entry.code)
    }
  })

  test('GET /errors/CODE returns the entry for every code', async () => {
    for (const code of Object.keys(DOCUMENTED_TABLE)) {
      const res = await app.inject({ method: 'GET', url: `/errors/${code}` })
      assert.equal(res.statusCode, 200, code)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      const entry = res.json()
      assert.equal(entry.code, code)
      assert.equal(entry.status, DOCUMENTED_TABLE[code])
      assert.equal(entry.title, catalogue[code as keyof typeof catalogue].title)
      assert.equal(entry.description, catalogue[code as keyof typeof catalogue].description)
      assert.equal(entry.retryable, catalogue[code as keyof typeof catalogue].retryable)
    }
  })

  test('every entry explains itself; exactly 408, 429, 503 and IDEMPOTENCY_KEY_IN_USE are retryable', async () => {
    const entries = (await app.inject({ method: 'GET', url: '/errors' })).json() as Array<{ code: string, status: number, description: string, retryable: boolean }>
    for (const entry of entries) {
      assert.ok(entry.description.trim().length >= 40, `${entry.code}: a description that says when and what to do`)
      assert.notEqual(entry.description, catalogue[entry.code as keyof typeof catalogue].message, entry.code)
    }
    const retryable = entries.filter((e) => e.retryable).map((e) => e.code).sort()
    // A request timed out because it was not all sent in time may go through unchanged (RFC 9110 15.5.9).
    assert.deepEqual(retryable, ['IDEMPOTENCY_KEY_IN_USE', 'REQUEST_TIMEOUT', 'SERVICE_UNAVAILABLE', 'TOO_MANY_REQUESTS', 'TOO_MANY_STREAMS'])
  })

  test('an unknown code is 404 NOT_FOUND, inherited object members and other spellings included', async () => {
    const unknown = ['NO_SUCH_CODE', 'not_found', 'Not_Found', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '%00', 'X'.repeat(300), 'NOT_FOUND%20']
    for (const code of unknown) {
      assertError(await app.inject({ method: 'GET', url: `/errors/${code}` }), 404, 'NOT_FOUND')
    }
  })
})
