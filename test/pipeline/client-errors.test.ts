import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, describe, test } from 'node:test'
import { buildTestApp } from '../helper.js'

// Answers the HTTP layer gives before a request reaches the app (408, 400, 414, 431) use the
// same problem body as every other error, and a client that stops halfway gets an answer.

const testApp = await buildTestApp()
after(testApp.close)
const base = new URL(await testApp.url())

/** Writes raw bytes, then resolves with everything the server sends until it closes. */
async function exchange (chunks: Array<string | Buffer>, options: { keepOpen?: boolean } = {}): Promise<{ raw: string, ms: number }> {
  const socket: Socket = connect(Number(base.port), base.hostname)
  const started = Date.now()
  let raw = ''
  socket.on('data', (chunk: Buffer) => { raw += chunk.toString('latin1') })
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
  for (const chunk of chunks) socket.write(chunk)
  if (options.keepOpen !== true) socket.end()
  await new Promise<void>((resolve) => { socket.once('close', () => { resolve() }) })
  return { raw, ms: Date.now() - started }
}

function parse (raw: string): { status: number, headers: Record<string, string>, body: any } {
  const [head = '', body = ''] = raw.split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) }
}

function assertProblem (raw: string, status: number, code: string): void {
  const res = parse(raw)
  assert.equal(res.status, status, raw)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(res.headers.connection, 'close')
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'requestId', 'status', 'title', 'type'])
  assert.equal(res.body.code, code)
  assert.equal(res.body.status, status)
  assert.equal(res.body.type, `/errors/${code}`)
  assert.equal(res.body.requestId, res.headers['x-request-id'])
}

describe('the HTTP layer answers in the problem body', () => {
  test('the documented limits: headers 10 s, whole request 30 s', () => {
    assert.equal(testApp.app.server.headersTimeout, 10_000)
    assert.equal(testApp.app.server.requestTimeout, 30_000)
  })

  test('bytes that are not HTTP: 400 MALFORMED_REQUEST', async () => {
    assertProblem((await exchange(['this is not http\r\n\r\n'])).raw, 400, 'MALFORMED_REQUEST')
    assertProblem((await exchange(['GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'])).raw, 400, 'MALFORMED_REQUEST')
  })

  test('a request line longer than the header limit: 414 URI_TOO_LONG', async () => {
    const { raw } = await exchange([`GET /v1/posts?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`])
    assertProblem(raw, 414, 'URI_TOO_LONG')
  })

  test('headers over the limit: 431 HEADERS_TOO_LARGE', async () => {
    const headers = Array.from({ length: 400 }, (_, i) => `X-Filler-${i}: ${'b'.repeat(60)}\r\n`).join('')
    const { raw } = await exchange([`GET / HTTP/1.1\r\nHost: x\r\n${headers}\r\n`])
    assertProblem(raw, 431, 'HEADERS_TOO_LARGE')
  })

  // The limits are shortened on this server so the test takes seconds; the values themselves
  // are checked above.
  describe('slow clients, with the limits shortened to 1.5 s', () => {
    test('half a body, then silence: 408 REQUEST_TIMEOUT, not silence', async () => {
      // Node requires headersTimeout <= requestTimeout; the headers here arrive at once.
      testApp.app.server.headersTimeout = 1000
      testApp.app.server.requestTimeout = 1500
      try {
        const { raw, ms } = await exchange(['POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":'], { keepOpen: true })
        assertProblem(raw, 408, 'REQUEST_TIMEOUT')
        assert.ok(ms < 10_000, `answered after ${ms} ms`)
      } finally {
        testApp.app.server.headersTimeout = 10_000
        testApp.app.server.requestTimeout = 30_000
      }
    })

    test('a connection that sends nothing: 408 REQUEST_TIMEOUT after the header limit, also while the server closes, which does not wait for it', async () => {
      testApp.app.server.headersTimeout = 1000
      testApp.app.server.requestTimeout = 1500
      try {
        const { raw, ms } = await exchange([], { keepOpen: true })
        assertProblem(raw, 408, 'REQUEST_TIMEOUT')
        assert.ok(ms < 5000, `answered after ${ms} ms`)
      } finally {
        testApp.app.server.headersTimeout = 10_000
        testApp.app.server.requestTimeout = 30_000
      }
      // Node stops checking the limits once close() is called, and close() ends idle connections
      // only; one still waiting for its first request is not idle.
      const closing = await buildTestApp()
      const port = Number(new URL(await closing.url()).port)
      closing.app.server.headersTimeout = 1000
      closing.app.server.requestTimeout = 1500
      const socket = connect(port, '127.0.0.1')
      let raw = ''
      socket.on('data', (chunk: Buffer) => { raw += chunk.toString('latin1') })
      await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
      const started = Date.now()
      await closing.close()
      const ms = Date.now() - started
      assert.ok(ms < 5000, `close() took ${ms} ms`)
      assertProblem(raw, 408, 'REQUEST_TIMEOUT')
      socket.destroy()
    })

    test('headers trickled (slow-loris): 408 REQUEST_TIMEOUT, and others are served meanwhile', async () => {
      testApp.app.server.headersTimeout = 1500
      // Node requires headersTimeout <= requestTimeout; the headers here arrive at once.
      testApp.app.server.headersTimeout = 1000
      testApp.app.server.requestTimeout = 1500
      try {
        const slow = Array.from({ length: 20 }, async () => await exchange(['GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n'], { keepOpen: true }))
        const served = await fetch(new URL('/health/live', base))
        assert.equal(served.status, 200)
        for (const { raw } of await Promise.all(slow)) assertProblem(raw, 408, 'REQUEST_TIMEOUT')
      } finally {
        testApp.app.server.headersTimeout = 10_000
        testApp.app.server.requestTimeout = 30_000
      }
    })
  })
})
