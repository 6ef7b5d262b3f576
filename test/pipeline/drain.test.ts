import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Worker } from 'node:worker_threads'
import { buildTestApp } from '../helper.js'

// The shutdown's holding phase on a process that was not running for a while (a busy machine
// takes the CPU from it): a client connects and sends its request meanwhile, so the kernel holds
// both for the process, but the process has not seen them yet when it next looks at the clock.
// The listener must not close on it: that would reset the client, which sent a whole request.
// The process is kept from running by blocking its event loop (Atomics.wait) while a client in
// a worker thread, with an event loop of its own, connects and writes.

const CLIENT = `
const { workerData, parentPort } = require('node:worker_threads')
const { connect } = require('node:net')
const shared = new Int32Array(workerData.shared)
Atomics.wait(shared, 0, 0)
const socket = connect(workerData.port, '127.0.0.1')
let answer = ''
socket.on('connect', () => {
  socket.write('GET /health/live HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n', () => { Atomics.store(shared, 1, 1); Atomics.notify(shared, 1) })
})
socket.on('data', (chunk) => { answer += chunk.toString('latin1') })
socket.on('error', (error) => { parentPort.postMessage({ error: error.code ?? String(error) }) })
socket.on('close', () => { parentPort.postMessage({ answer: answer.split('\\r\\n')[0] }) })
`

describe('holding before the listener closes', { timeout: 30_000 }, () => {
  for (let round = 0; round < 5; round++) {
    test(`a connection and its request that arrived while the process was not running are answered, not reset (round ${round + 1})`, async () => {
      const { app, url, close } = await buildTestApp()
      try {
        const port = Number(new URL(await url()).port)
        const shared = new Int32Array(new SharedArrayBuffer(8))
        const worker = new Worker(CLIENT, { eval: true, workerData: { shared: shared.buffer, port } })
        const outcome = new Promise<{ answer?: string, error?: string }>((resolve) => { worker.once('message', resolve) })
        await new Promise((resolve) => { worker.once('online', resolve) })

        app.drain.begin()
        const holding = app.drain.hold()
        // After the event loop's poll (in its check phase): its next turn starts with the timers,
        // as it does for a process the scheduler kept waiting.
        setImmediate(() => {
          // The client goes; this thread does not run until its request is written, and then
          // for longer than the quiet time the holding phase waits for.
          Atomics.store(shared, 0, 1)
          Atomics.notify(shared, 0)
          Atomics.wait(shared, 1, 0, 5000)
          Atomics.wait(shared, 1, 1, 120)
        })
        await holding
        await app.close()
        const result = await outcome
        await worker.terminate()
        assert.deepEqual(result, { answer: 'HTTP/1.1 200 OK' })
      } finally {
        await close()
      }
    })
  }
})
