import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { newKey } from '../../src/auth/api-key-format.js'
import { flushAccessLines } from '../../src/pipeline/request-log.js'
import { scratchDatabase } from '../scratch-database.js'

// At info, one structured line per request, written when the answer is known: request id,
// method, URL, route pattern, status and time. Nothing of the body or the credentials.

const lines: Array<Record<string, unknown>> = []
const stream = new Writable({
  write (chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
    done()
  }
})
const scratch = await scratchDatabase('request-log')
const config = loadConfig({ DATABASE_URL: scratch.url, LOG_LEVEL: 'info' })
const database = openDatabase(config.databaseUrl)
await migrateToLatest(database.db, database.dialect)
const app = await buildApp({ config, database, logger: { level: 'info', stream } })
after(async () => { await app.close(); await scratch.drop() })

/** The lines of a request, once the access lines waiting for their batch have been written (src/pipeline/request-log.ts). */
const ofRequest = async (id: string) => {
  flushAccessLines()
  await new Promise((resolve) => setImmediate(resolve))
  return lines.filter((l) => l.reqId === id)
}

describe('request log', () => {
  test('one line per request, at info, with id, method, url, route, status and time', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/posts?authorId=12345&limit=5', headers: { 'x-request-id': 'log-test-1' } })
    assert.equal(res.statusCode, 200)
    const logged = await ofRequest('log-test-1')
    assert.equal(logged.length, 1, JSON.stringify(logged))
    const line = logged[0]!
    assert.equal(line.level, 30)
    assert.equal(line.msg, 'request completed')
    assert.equal(line.method, 'GET')
    assert.equal(line.url, '/v1/posts?authorId=12345&limit=5')
    assert.equal(line.route, '/v1/posts')
    assert.equal(line.statusCode, 200)
    assert.equal(typeof line.responseTime, 'number')
    // In milliseconds to the microsecond: no digits past the third after the point.
    assert.equal(Math.round(Number(line.responseTime) * 1000) / 1000, line.responseTime)
    // pino's own line, member for member: its base members, the request id, then the fields.
    assert.deepEqual(Object.keys(line), ['level', 'time', 'pid', 'hostname', 'reqId', 'method', 'url', 'route', 'statusCode', 'responseTime', 'remoteAddress', 'msg'])
    assert.ok(Math.abs(Number(line.time) - Date.now()) < 5000)
  })

  test('a request id with quotes and a backslash is still one valid JSON line; an unknown route has no route', async () => {
    const id = 'id "with" \\ and {braces}'
    const res = await app.inject({ method: 'GET', url: '/nowhere?q=%22x%22', headers: { 'x-request-id': id } })
    assert.equal(res.statusCode, 404)
    const logged = await ofRequest(id)
    assert.equal(logged.length, 1)
    assert.equal(logged[0]!.url, '/nowhere?q=%22x%22')
    assert.equal(logged[0]!.route, undefined)
  })

  test('a stream ticket in the URL is never logged', async () => {
    await app.inject({ method: 'GET', url: '/v1/events?after=3&ticket=st_secret-ticket-value&type=order.created', headers: { 'x-request-id': 'log-ticket', accept: 'text/event-stream' } })
    const logged = await ofRequest('log-ticket')
    assert.equal(logged.length, 1)
    assert.equal(logged[0]!.url, '/v1/events?after=3&ticket=[REDACTED]&type=order.created')
    assert.ok(!JSON.stringify(lines).includes('st_secret-ticket-value'))
  })

  test('a credential in the URL is never logged, however its name is spelled or wherever it stands', async () => {
    const key = newKey().key
    const cases: Array<[string, string]> = [
      // The router decodes the name: this one opens a stream as `ticket` does.
      ['/v1/events?after=3&%74icket=est_escaped-name-ticket-value', '/v1/events?after=3&%74icket=[REDACTED]'],
      ['/v1/events?Ticket=est_other-case-ticket-value', '/v1/events?Ticket=[REDACTED]'],
      ['/v1/events?TICKET=plain-upper-case-ticket&limit=2', '/v1/events?TICKET=[REDACTED]&limit=2'],
      ['/v1/posts?access_token=a-bearer-token-in-a-url', '/v1/posts?access_token=[REDACTED]'],
      ['/v1/posts?api_key=another-secret-in-a-url', '/v1/posts?api_key=[REDACTED]'],
      [`/v1/posts?q=${key}`, '/v1/posts?q=[REDACTED]'],
      [`/v1/posts?q=%${key.charCodeAt(0).toString(16)}${key.slice(1)}`, '/v1/posts?q=[REDACTED]'],
      [`/v1/api-keys/${key}`, '/v1/api-keys/[REDACTED]'],
      ['/v1/posts?authorId=12&limit=5', '/v1/posts?authorId=12&limit=5']
    ]
    for (const [i, [url, shown]] of cases.entries()) {
      await app.inject({ method: 'GET', url, headers: { 'x-request-id': `log-credential-${i}`, accept: 'text/event-stream' } })
      const logged = await ofRequest(`log-credential-${i}`)
      assert.equal(logged.length, 1, url)
      assert.equal(logged[0]!.url, shown)
    }
    const text = JSON.stringify(lines)
    for (const secret of ['escaped-name-ticket-value', 'other-case-ticket-value', 'plain-upper-case-ticket', 'a-bearer-token-in-a-url', 'another-secret-in-a-url', key.slice(3)]) {
      assert.ok(!text.includes(secret), secret)
    }
  })

  test('a write logs one line too, without its body or token', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: { 'x-request-id': 'log-test-2', authorization: 'Bearer secret-token-never-logged' },
      payload: { email: 'logged@example.com', password: 'never in a log line', name: 'Logged' }
    })
    assert.equal(res.statusCode, 201)
    const logged = await ofRequest('log-test-2')
    assert.equal(logged.length, 1)
    assert.equal(logged[0]!.statusCode, 201)
    const text = JSON.stringify(lines)
    assert.ok(!text.includes('never in a log line'))
    assert.ok(!text.includes('secret-token-never-logged'))
  })
})
