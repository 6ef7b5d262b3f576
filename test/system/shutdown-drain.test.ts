import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { startServer } from '../server/process.js'
import { signUpAndLogIn } from './api-client.js'
import { attempt, count, json, startLoad } from './load.js'

// SIGTERM while keep-alive clients keep writing: readiness fails at once, requests are still
// served (with Connection: close) for the grace period, then the listener closes, in-flight
// requests finish and the process exits 0. Nothing acknowledged is lost; a connection reset is
// only the unavoidable race of a request written onto a connection as the server closes it.

const WORKERS = 20
const GRACE_MS = 1500

describe('SIGTERM under keep-alive load', { timeout: 90_000 }, () => {
  test(`drains for SHUTDOWN_GRACE_MS=${GRACE_MS}, loses nothing, exits 0`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'api-drain-'))
    after(() => { rmSync(dir, { recursive: true, force: true }) })
    const env = { DATABASE_URL: `file:${join(dir, 'app.db')}`, SHUTDOWN_GRACE_MS: String(GRACE_MS) }
    const server = startServer(env)
    const base = await server.listening()
    const user = await signUpAndLogIn(base, 'drain@example.com')

    // fetch keeps connections alive by default (undici's pool): each worker reuses its sockets.
    const load = startLoad(WORKERS, async (worker, round) =>
      await attempt('create', `${base}/v1/posts`, json({ title: `w${worker}`, content: `r${round}` }, user.auth), (b) => String(b.id)))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const signalAt = Date.now()
    server.child.kill('SIGTERM')
    await server.logged(/draining: not ready/)
    // The server may take a moment to handle the signal: the grace period starts when it does.
    const drainingAt = Date.now()
    const ready = await attempt('ready', `${base}/health/ready`)
    const readyMs = ready.ended - signalAt
    const exitCode = await server.exit()
    const exitedAt = Date.now()
    // Once the listener is closed the clients are refused; give them a moment to notice.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const outcomes = await load.stop()

    const inGrace = outcomes.filter((o) => o.started > drainingAt && o.ended < drainingAt + GRACE_MS - 200 && typeof o.status === 'number')
    const figures = {
      requests: outcomes.length,
      acknowledged: count(outcomes, (o) => o.created !== undefined),
      servedDuringGrace: inGrace.length,
      '503': count(outcomes, (o) => o.status === 503),
      '500': count(outcomes, (o) => o.status === 500),
      resets: count(outcomes, (o) => o.status === 'reset' || o.status === 'failed'),
      refusedAfterClose: count(outcomes, (o) => o.status === 'refused'),
      msToReady503: readyMs,
      msSignalToExit: exitedAt - signalAt
    }
    t.diagnostic(`figures ${JSON.stringify(figures)}`)

    assert.equal(exitCode, 0)
    assert.equal(ready.status, 503, 'readiness fails as soon as draining starts')
    assert.ok(inGrace.length > 0, 'requests are still served during the grace period')
    for (const o of inGrace) {
      assert.equal(o.status, 201)
      assert.equal(o.connection, 'close', 'answers during the grace period close their connection')
    }
    assert.equal(figures['500'], 0)
    for (const o of outcomes) if (o.status === 503) assert.match(String(o.retryAfter), /^[1-9]\d*$/)
    // The unavoidable race: at most one request per client, written as its connection closed.
    assert.ok(figures.resets <= WORKERS, `${figures.resets} resets`)

    // Everything acknowledged survived the shutdown.
    const again = startServer(env)
    const base2 = await again.listening()
    try {
      for (const o of outcomes) {
        if (o.created === undefined) continue
        assert.equal((await fetch(`${base2}/v1/posts/${o.created}`)).status, 200, `post ${o.created}`)
      }
    } finally {
      again.child.kill('SIGTERM')
      await again.exit()
    }
  })
})
