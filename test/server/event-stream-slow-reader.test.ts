import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { BUFFER_LIMIT } from '../../src/events/event-stream.js'
import { startServer } from './process.js'

// An event stream whose reader stops reading is not held in memory without limit: once
// BUFFER_LIMIT bytes wait for it, the server drops it. Here a raw socket opens a stream and never
// reads; writers create posts of 100 KB each (30 MB of events) meanwhile. The server drops the
// stream, counts it, and its memory grows by a fraction of what was written.

const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false
const POSTS = 300
const CONTENT = 'x'.repeat(100_000)

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024

test('a stalled reader is dropped once its buffer passes the bound; memory stays flat while writers go on', { skip, timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-slow-reader-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, METRICS_PORT: '0', BODY_LIMIT_BYTES: '1048576' })
  const base = await server.listening()
  const json = { 'content-type': 'application/json' }
  await fetch(`${base}/v1/users`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'w@example.com', password: 'password 1', name: 'W' }) })
  const { token } = await (await fetch(`${base}/v1/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'w@example.com', password: 'password 1' }) })).json() as { token: string }

  // The stalled reader: it sends its request and never reads a byte of the answer.
  const { port } = new URL(base)
  const socket = connect(Number(port), '127.0.0.1')
  socket.pause()
  let closedByServer = false
  socket.on('close', () => { closedByServer = true })
  socket.on('error', () => {})
  socket.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`)
  await server.logged(/"msg":"event stream opened"/)

  const before = rssMiB(server.child.pid!)
  let peak = before
  for (let i = 0; i < POSTS; i++) {
    const res = await fetch(`${base}/v1/posts`, { method: 'POST', headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ title: `p${i}`, content: CONTENT }) })
    assert.equal(res.status, 201)
    await res.arrayBuffer()
    if (i % 20 === 0) peak = Math.max(peak, rssMiB(server.child.pid!))
  }
  await server.logged(/"reason":"slow reader"/)
  // Reading now shows the end the server made: the socket closes once what was sent is read.
  socket.resume()
  for (let i = 0; i < 100 && !closedByServer; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  peak = Math.max(peak, rssMiB(server.child.pid!))
  const written = (POSTS * CONTENT.length) / 2 ** 20
  server.child.kill('SIGTERM')
  assert.equal(await server.exit(), 0)
  assert.ok(closedByServer, 'the server closed the stalled stream')
  assert.match(server.stdout(), /"msg":"event stream ended"/)
  // What stayed in memory is of the order of the bound, not of what was written (30 MB of events).
  assert.ok(peak - before < 24, `RSS grew ${(peak - before).toFixed(1)} MiB while ${written.toFixed(0)} MiB of events were written (bound ${BUFFER_LIMIT / 2 ** 20} MiB)`)
})
