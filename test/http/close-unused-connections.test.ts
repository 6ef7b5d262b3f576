import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { test } from 'node:test'
import { request } from 'undici'
import { buildTestApp, createUser } from '../helper.js'
import { openStream } from '../events/sse-client.js'

// Closing the server closes the connections nothing is being asked on: idle keep-alive ones
// (Node's own rule) and ones the client opened but has sent nothing on yet, as HTTP clients and
// browsers open spares ahead of need. Node counts the latter as busy, so close() would wait for
// them until the socket timeout (60 s): Node reuses the parser of a closed connection for a new
// one, and a parser whose last request never finished (an event stream the client closed) makes
// the new connection look busy. A connection in the middle of a request is not closed.

async function opened (port: number): Promise<Socket> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { resolve(socket) })
    socket.once('error', reject)
  })
}

function closed (socket: Socket): Promise<void> {
  return new Promise((resolve) => { if (socket.destroyed || socket.readyState === 'closed') resolve(); else socket.once('close', () => { resolve() }) })
}

/** Fails if the promise has not settled within `ms` (the socket timeout it guards against is 60 s). */
async function within<T> (ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what}: still waiting after ${ms} ms`)) }, ms) })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

test('close() ends connections that never carried a request, not one whose request is on its way', async () => {
  const t = await buildTestApp({}, { conformance: false })
  const base = await t.url()
  const port = Number(new URL(base).port)

  // Event streams the client closes: their connections end in the middle of an answer.
  const user = await createUser(t.app)
  const streams = await Promise.all([1, 2, 3].map(async () => await openStream(`${base}/v1/events`, user.auth)))
  for (const stream of streams) stream.close()
  await new Promise((resolve) => setTimeout(resolve, 100))

  const unused = await Promise.all([opened(port), opened(port), opened(port)])
  const unusedClosed = unused.map(closed)
  // A keep-alive connection that has carried one request and is idle now.
  const idle = await request(`${base}/health/live`)
  assert.equal(idle.statusCode, 200)
  await idle.body.text()
  // A request whose head has half arrived: it is answered (503 while closing), not cut off.
  const halfway = await opened(port)
  halfway.setEncoding('utf8')
  let answer = ''
  halfway.on('data', (chunk: string) => { answer += chunk })
  halfway.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  await new Promise((resolve) => setTimeout(resolve, 50))

  const closing = t.app.close()
  await within(10_000, Promise.all(unusedClosed), 'the unused connections closed')
  for (const socket of unused) socket.destroy()
  halfway.write('\r\n')
  await closed(halfway)
  assert.match(answer, /^HTTP\/1\.1 503 /)
  // Whatever else is open, close() does not wait out the 60 s socket timeout.
  await within(10_000, closing, 'close()')
  await t.close().catch(() => {})
})
