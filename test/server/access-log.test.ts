import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { Agent, fetch } from 'undici'
import { QUIET_LIMITS } from '../helper.js'
import { serverArguments } from '../service-command.js'

// Every request is logged: one access line per request at info, under any load (no sampling).
// 32 clients read and write at once, each request with its own X-Request-Id; once more than 500
// have been answered (however long a busy machine takes), a SIGTERM arrives while they go on
// (the server drains: SHUTDOWN_GRACE_MS); the clients go on until refused. In the log file
// afterwards: exactly one access line per request that was answered, with its id, and no other.

const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false
const CLIENTS = 32
/** Answered requests before the SIGTERM: more than 500. */
const ANSWERED = 501
/** How long the clients may take to have that many answered (about 2 s on an idle machine). */
const ANSWERED_WITHIN_MS = 20_000

test('an access line for every request answered under concurrent load, through a SIGTERM, and no other', { skip, timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-access-log-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'server.log')
  const fd = openSync(file, 'w')
  const child = spawn(process.execPath, serverArguments(), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...QUIET_LIMITS, LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '500', DATABASE_URL: `file:${join(dir, 'app.db')}` },
    stdio: ['ignore', fd, fd]
  })
  closeSync(fd)
  const exited = once(child, 'exit')
  const lines = (): Array<Record<string, unknown>> => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>)
  let base: string | undefined
  for (let i = 0; i < 300 && base === undefined; i++) {
    base = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(readFileSync(file, 'utf8'))?.[1]
    if (base === undefined) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.ok(base !== undefined, 'the server started')

  // A user to write as.
  await fetch(`${base}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'password 1', name: 'A' }) })
  const login = await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'password 1' }) })
  const { token } = await login.json() as { token: string }

  const agent = new Agent({ connections: CLIENTS })
  const answered: string[] = []
  let refused = 0
  let sent = 0
  let stop = false
  let enough!: () => void
  const enoughAnswered = new Promise<string>((resolve) => { enough = () => { resolve('answered') } })
  const client = async (c: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const id = `load-${c}-${i}`
      sent += 1
      try {
        const res = i % 3 === 0
          ? await fetch(`${base}/v1/posts`, { method: 'POST', headers: { 'x-request-id': id, 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ title: 'T', content: 'C' }), dispatcher: agent })
          : await fetch(`${base}/v1/posts?limit=5`, { headers: { 'x-request-id': id }, dispatcher: agent })
        await res.arrayBuffer()
        answered.push(id)
        if (answered.length === ANSWERED) enough()
      } catch {
        // Refused: the server has stopped listening. No answer, so no line expected.
        refused += 1
        stop = true
      }
    }
  }
  const clients = Array.from({ length: CLIENTS }, async (_, c) => { await client(c) })
  // The SIGTERM comes once that many have been answered, not after a fixed time: a busy machine
  // answers fewer a second. Whatever else happens first fails the test, naming it.
  const bound = new AbortController()
  const first = await Promise.race([
    enoughAnswered,
    Promise.all(clients).then(() => 'every client refused'),
    exited.then(([code, signal]) => `the server exited (${String(code ?? signal)})`),
    delay(ANSWERED_WITHIN_MS, `${ANSWERED_WITHIN_MS} ms passed`, { signal: bound.signal })
  ])
  bound.abort()
  if (first !== 'answered') {
    const failure = `${first} before ${ANSWERED} requests were answered: ${answered.length} answered, ${refused} refused`
    stop = true
    child.kill('SIGKILL')
    await agent.destroy()
    assert.fail(failure)
  }
  child.kill('SIGTERM')
  await Promise.all(clients)
  const [code] = await exited
  await agent.close()
  assert.equal(code, 0)

  const access = lines().filter((l) => l.msg === 'request completed' && String(l.reqId).startsWith('load-'))
  const logged = access.map((l) => String(l.reqId))
  assert.ok(answered.length > 500, `${answered.length} requests answered`)
  assert.equal(new Set(logged).size, logged.length, 'one line per request')
  assert.deepEqual(new Set(logged), new Set(answered), 'a line for every request answered, and no other')
  assert.ok(refused > 0 && sent === answered.length + refused)
})
