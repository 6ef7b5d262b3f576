import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { Agent, fetch } from 'undici'
import { QUIET_LIMITS } from '../helper.js'
import { serverArguments } from '../service-command.js'

// The log is written without blocking the event loop: lines are queued and written in batches
// (pino's asynchronous destination), so a line may still be in memory when the process ends.
// Whatever ends it, the queue is written first: here the log goes to a file, as an operator's
// does, and after a SIGTERM, a SIGINT, an uncaught exception and a process.exit at start-up, the
// file holds every line, the last requests' ones included.

const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false
const REQUESTS = 300

describe('the log reaches the file whatever ends the process', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-log-flush-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  // Loaded with --import: an uncaught exception on SIGUSR2, to crash the server on cue.
  const crasher = join(dir, 'crash-on-sigusr2.mjs')
  writeFileSync(crasher, "process.on('SIGUSR2', () => { setImmediate(() => { throw new Error('crash on cue') }) })\n")

  function start (name: string, env: Record<string, string> = {}, nodeFlags: string[] = []): { log: () => string[], exit: Promise<number | null>, pid: number } {
    const file = join(dir, `${name}.log`)
    const fd = openSync(file, 'w')
    const args = serverArguments()
    const child = spawn(process.execPath, [...nodeFlags, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...QUIET_LIMITS, LOG_LEVEL: 'info', DATABASE_URL: `file:${join(dir, `${name}.db`)}`, ...env },
      stdio: ['ignore', fd, fd]
    })
    closeSync(fd)
    const log = (): string[] => readFileSync(file, 'utf8').split('\n').filter((line) => line !== '')
    return { log, exit: once(child, 'exit').then(([code]) => code as number | null), pid: child.pid! }
  }

  async function listening (log: () => string[]): Promise<string> {
    for (let i = 0; i < 300; i++) {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log().join('\n'))
      if (match !== null) return match[1]!
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`the server did not start: ${log().join('\n')}`)
  }

  /** REQUESTS requests in a row on a keep-alive connection, each with its own request id; the ids. */
  async function requests (base: string, name: string): Promise<string[]> {
    const agent = new Agent({ connections: 4 })
    const ids = Array.from({ length: REQUESTS }, (_, i) => `${name}-${i}`)
    for (let i = 0; i < ids.length; i += 4) {
      await Promise.all(ids.slice(i, i + 4).map(async (id) => {
        const res = await fetch(`${base}/v1/posts/1`, { headers: { 'x-request-id': id }, dispatcher: agent })
        assert.equal(res.status, 404)
        await res.arrayBuffer()
      }))
    }
    await agent.close()
    return ids
  }

  function completed (lines: string[]): Set<string> {
    return new Set(lines.map((line) => JSON.parse(line) as { msg?: string, reqId?: string })
      .filter((entry) => entry.msg === 'request completed').map((entry) => entry.reqId!))
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal} right after the last answer: every request's line, then the shutdown's`, async () => {
      const server = start(signal.toLowerCase(), { SHUTDOWN_GRACE_MS: '0' })
      const base = await listening(server.log)
      const ids = await requests(base, signal)
      process.kill(server.pid, signal)
      assert.equal(await server.exit, 0)
      const lines = server.log()
      const logged = completed(lines)
      assert.deepEqual(ids.filter((id) => !logged.has(id)), [], 'requests without their log line')
      assert.ok(lines.some((line) => line.includes('"msg":"closing: no new connections, finishing requests in flight"')), 'the shutdown is logged')
    })
  }

  test('an uncaught exception: every request\'s line and the fatal one', async () => {
    const server = start('crash', {}, ['--import', crasher])
    const base = await listening(server.log)
    const ids = await requests(base, 'crash')
    process.kill(server.pid, 'SIGUSR2')
    assert.equal(await server.exit, 1)
    const lines = server.log()
    const logged = completed(lines)
    assert.deepEqual(ids.filter((id) => !logged.has(id)), [], 'requests without their log line')
    assert.match(lines.at(-1)!, /"level":60.*"msg":"uncaught exception, exiting"/)
  })

  test('process.exit at start-up (the port is taken): the fatal line', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    after(() => { taken.close() })
    const port = (taken.address() as { port: number }).port
    const server = start('taken', { PORT: String(port) })
    assert.equal(await server.exit, 1)
    assert.match(server.log().at(-1)!, /"level":60.*"msg":"could not listen"/)
  })
})
