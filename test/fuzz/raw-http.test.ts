import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World } from './fuzz-world.js'

// What a test through `inject` cannot send: bytes on a real loopback socket. Every operation's
// path, with odd ids, non-ASCII header bytes, folded headers, duplicated or conflicting
// Content-Length and Transfer-Encoding, broken chunked framing and bodies cut short. Whatever
// arrives, an answer (if the server gives one before the connection ends) is never a 5xx and is
// always the service's error body; the server keeps answering afterwards.

const fuzz = await startFuzzApp({ BODY_LIMIT_BYTES: '65536' })
after(fuzz.close)
const world = await World.create(fuzz)
const base = new URL(await fuzz.url())

interface Answer { status: number, headers: string, body: string }

/** Writes the bytes, half-closes, and reads until the server closes (or 3 s pass). */
async function exchange (bytes: Buffer): Promise<Answer | undefined> {
  return await new Promise((resolve) => {
    const socket = connect(Number(base.port), base.hostname)
    const chunks: Buffer[] = []
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      const text = Buffer.concat(chunks).toString('latin1')
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text)
      if (match === null) { resolve(undefined); return }
      const split = text.indexOf('\r\n\r\n')
      resolve({ status: Number(match[1]), headers: text.slice(0, split), body: split === -1 ? '' : text.slice(split + 4) })
    }
    const timer = setTimeout(done, 3000)
    socket.on('data', (c) => chunks.push(c))
    socket.on('end', done)
    socket.on('error', done)
    socket.on('connect', () => socket.end(bytes))
  })
}

const PATHS = [...new Set(fuzz.operations.map((op) => `${op.method} ${op.path}`))]
const oddSegment = fc.oneof(fc.constantFrom('1', '9223372036854775808', '%E0%A4%A', '%', '%00', '%2e%2e', '..%2f', '\u00e9', '1?x=%ZZ', '1#frag', 'a b'),
  fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((s) => s.replace(/[\s]/g, '')))
const headerLine = fc.oneof(
  fc.constantFrom('Content-Type: application/json', 'Content-Type: text/plain', 'Content-Encoding: gzip', 'Accept: application/problem+json',
    'X-Request-Id: \u00ff\u00fe', 'X-Request-Id: caf\u00e9', 'If-Match: "x"', 'Folded: a\r\n continued', 'Idempotency-Key: \u00e9t\u00e9',
    'Authorization: Bearer', 'Authorization: Basic Zm9vOmJhcg==', 'Expect: 100-continue', 'Content-Length: abc', 'Content-Length: -1',
    'Transfer-Encoding: chunked, identity', 'Transfer-Encoding: gzip, chunked', 'Transfer-Encoding:  chunked', 'Transfer-Encoding: xchunked',
    'X: ' + 'y'.repeat(20_000), 'Bad Name: x', ': empty'),
  fc.constantFrom('alice', 'bob', 'admin').map((who) => `Authorization: Bearer ${world.users[who as 'alice'].token}`)
)
const framing = fc.constantFrom('none', 'length', 'short length', 'two lengths', 'chunked', 'bad chunk', 'no last chunk', 'length and chunked')
const body = fc.oneof(fc.constantFrom('{}', '{"title":"t","content":"c"}', '{', '[1,2', '\u00ff\u00fe{', '{"a":1}'), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)))

function build (line: string, segment: string, headers: string[], frame: string, payload: string): Buffer {
  const [method, path] = line.split(' ') as [string, string]
  const target = path.replace(/\{\w+\}/g, segment)
  const head = [`${method} ${target} HTTP/1.1`, `Host: ${base.host}`, 'Connection: close', ...headers]
  const bytes = Buffer.from(payload, 'latin1')
  const chunk = `${bytes.length.toString(16)}\r\n${payload}\r\n`
  switch (frame) {
    case 'length': head.push(`Content-Length: ${bytes.length}`); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${payload}`, 'latin1')
    case 'short length': head.push(`Content-Length: ${Math.max(0, bytes.length - 1)}`); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${payload}`, 'latin1')
    case 'two lengths': head.push(`Content-Length: ${bytes.length}`, `Content-Length: ${bytes.length + 1}`); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${payload}`, 'latin1')
    case 'chunked': head.push('Transfer-Encoding: chunked'); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${chunk}0\r\n\r\n`, 'latin1')
    case 'bad chunk': head.push('Transfer-Encoding: chunked'); return Buffer.from(`${head.join('\r\n')}\r\n\r\nzz\r\n${payload}\r\n0\r\n\r\n`, 'latin1')
    case 'no last chunk': head.push('Transfer-Encoding: chunked'); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${chunk}`, 'latin1')
    case 'length and chunked': head.push(`Content-Length: ${bytes.length}`, 'Transfer-Encoding: chunked'); return Buffer.from(`${head.join('\r\n')}\r\n\r\n${chunk}0\r\n\r\n`, 'latin1')
    default: return Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1')
  }
}

test('raw bytes on a socket: never a 5xx, always the service\'s error body, and the server keeps answering', async (t) => {
  let sent = 0
  let unanswered = 0
  try {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...PATHS), oddSegment, fc.array(headerLine, { maxLength: 3 }), framing, body, async (line, segment, headers, frame, payload) => {
      await world.ensure()
      const bytes = build(line, segment, headers, frame, payload)
      sent += 1
      const answer = await exchange(bytes)
      if (answer === undefined) { unanswered += 1; return }
      const request = bytes.toString('latin1').slice(0, 600)
      assert.ok(answer.status < 500, `${answer.status} for ${JSON.stringify(request)}: ${answer.body.slice(0, 300)}`)
      if (answer.status >= 400) {
        const error = JSON.parse(answer.body) as { code?: unknown, status?: unknown }
        assert.equal(typeof error.code, 'string', `not the service's error body for ${JSON.stringify(request)}: ${answer.body.slice(0, 300)}`)
        assert.equal(error.status, answer.status)
      }
    }), { seed: SEED, numRuns: runs(120), endOnFailure: true })
    const live = await fuzz.app.inject({ method: 'GET', url: '/health/live' })
    assert.equal(live.statusCode, 200)
  } finally {
    t.diagnostic(`fuzz: ${sent} generated raw requests (${unanswered} closed without an answer), seed ${SEED}`)
  }
})
