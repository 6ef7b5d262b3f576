import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, describe, test } from 'node:test'
import Fastify from 'fastify'
import { errorHandler } from '../../src/pipeline/error-handler.js'
import { ApiError } from '../../src/http/errors.js'
import { assertError } from '../helper.js'

// The generic 500 (docs/api.md): the last fallback, message exactly "An internal server
// error occurred.", nothing internal in the body; the error itself is logged for operators.

const logLines: string[] = []
const logStream = new Writable({ write (chunk: Buffer, _encoding, done) { logLines.push(chunk.toString()); done() } })
const app = Fastify({ logger: { level: 'error', stream: logStream } })
await app.register(errorHandler)

const SECRET_SQL = 'SELECT secret FROM users WHERE id = 42'
app.get('/error', async () => {
  const error = new Error(`query failed: ${SECRET_SQL}`)
  error.stack = `Error: query failed: ${SECRET_SQL}\n    at selectSecret (/srv/app/src/users/user.repository.ts:12:7)`
  throw error
})
app.get('/coded', async () => { throw Object.assign(new Error(SECRET_SQL), { code: '42P01', statusCode: 418, detail: 'relation "secret" does not exist' }) })
app.get('/type-error', async () => { (undefined as unknown as { x: () => void }).x() })
app.get('/string', async () => { throw SECRET_SQL as unknown as Error })
app.get('/null', async () => { throw null as unknown as Error })
app.get('/api-error', async () => { throw new ApiError('ACCESS_DENIED') })
app.get('/unavailable', async () => { throw Object.assign(new Error(`connect ECONNREFUSED 10.0.0.5:5432 ${SECRET_SQL}`), { code: 'ECONNREFUSED' }) })
await app.ready()
after(() => app.close())

const LEAKS = [/SELECT/i, /secret/i, /42P01/, /relation/, /\bat \w+ \(/, /\.ts:\d+/, /\/srv\//, /TypeError/, /undefined/, /10\.0\.0\.5/]

function assertNoLeak (body: string): void {
  for (const leak of LEAKS) assert.doesNotMatch(body, leak)
}

describe('generic 500', () => {
  test('an Error with SQL in its message and a stack: INTERNAL_SERVER_ERROR, nothing leaked', async () => {
    const res = await app.inject({ method: 'GET', url: '/error' })
    assertError(res, 500, 'INTERNAL_SERVER_ERROR')
    assert.equal(res.json().message, 'An internal server error occurred.')
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message', 'requestId', 'status', 'title', 'type'])
    assertNoLeak(res.body)
    for (const value of Object.values(res.headers)) assertNoLeak(String(value))
  })

  test('a driver-style error with its own code and statusCode is still the generic 500', async () => {
    const res = await app.inject({ method: 'GET', url: '/coded' })
    assertError(res, 500, 'INTERNAL_SERVER_ERROR')
    assert.equal(res.json().message, 'An internal server error occurred.')
    assertNoLeak(res.body)
  })

  test('a TypeError, a thrown string and a thrown null: the generic 500', async () => {
    for (const url of ['/type-error', '/string', '/null']) {
      const res = await app.inject({ method: 'GET', url })
      assertError(res, 500, 'INTERNAL_SERVER_ERROR')
      assert.equal(res.json().message, 'An internal server error occurred.')
      assertNoLeak(res.body)
    }
  })

  test('the error is logged with its message and stack, for operators', () => {
    const logged = logLines.join('\n')
    assert.match(logged, /SELECT secret FROM users/)
    assert.match(logged, /user\.repository\.ts:12:7/)
  })

  test('catalogue errors pass through; a database outage is 503 with Retry-After, nothing leaked', async () => {
    assertError(await app.inject({ method: 'GET', url: '/api-error' }), 403, 'ACCESS_DENIED')
    const res = await app.inject({ method: 'GET', url: '/unavailable' })
    assertError(res, 503, 'SERVICE_UNAVAILABLE')
    assert.match(String(res.headers['retry-after']), /^\d+$/)
    assertNoLeak(res.body)
  })
})
