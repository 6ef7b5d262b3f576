import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startServer, type ServerProcess } from '../server/process.js'
import { attempt, count, json, startLoad, waitFor, type Outcome } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// PostgreSQL stopped (fast, immediate) and frozen (SIGSTOP) while clients write: the process
// stays up, requests get 503 with Retry-After within seconds (never a 500, never a hang), and
// the service heals by itself when the database returns. The cluster is this test's own.

const WORKERS = 16

describe('PostgreSQL outage under load', { skip: skipWithoutPostgres, timeout: 150_000 }, () => {
  let pg: PrivatePostgres
  let server: ServerProcess
  let base: string
  let auth: Record<string, string>
  let postId: number

  before(async () => {
    pg = await startPrivatePostgres()
    server = startServer({ DATABASE_URL: pg.url, SHUTDOWN_GRACE_MS: '0' })
    base = await server.listening()
    const email = 'outage@example.com'
    assert.equal((await fetch(`${base}/v1/users`, json({ email, password: 'outage password', name: 'O' }))).status, 201)
    const token = (await (await fetch(`${base}/v1/sessions`, json({ email, password: 'outage password' }))).json() as { token: string }).token
    auth = { authorization: `Bearer ${token}` }
    postId = (await (await fetch(`${base}/v1/posts`, json({ title: 't', content: 'c' }, auth))).json() as { id: number }).id
  })
  after(async () => {
    if (server !== undefined && server.child.exitCode === null) {
      server.child.kill('SIGTERM')
      await server.exit()
    }
    pg?.destroy()
  })

  const step = async (worker: number, round: number): Promise<Outcome> => {
    switch ((worker + round) % 3) {
      case 0: return await attempt('view', `${base}/v1/posts/${postId}/views`, { method: 'POST' })
      case 1: return await attempt('read', `${base}/v1/posts/${postId}`)
      default: return await attempt('create', `${base}/v1/posts`, json({ title: `w${worker}`, content: `r${round}` }, auth))
    }
  }

  const ready = async (): Promise<number> => (await fetch(`${base}/health/ready`)).status

  for (const fault of ['fast stop', 'immediate stop', 'freeze (SIGSTOP)'] as const) {
    test(`${fault}: 503 within seconds, no 500, process alive, healed without restart`, async (t) => {
      const load = startLoad(WORKERS, step)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const faultAt = Date.now()
      if (fault === 'fast stop') pg.stop('fast')
      else if (fault === 'immediate stop') pg.stop('immediate')
      else pg.freeze()
      const toReady503 = await waitFor('readiness 503', async () => await ready() === 503, 15_000)
      // Let the outage last past every time limit (5 s queries) so that waiting requests show.
      await new Promise((resolve) => setTimeout(resolve, 7000))
      const restoreAt = Date.now()
      if (fault === 'freeze (SIGSTOP)') pg.thaw()
      else pg.start()
      const toHealed = await waitFor('readiness 200', async () => await ready() === 200, 30_000)
      // A little normal service after healing.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const outcomes = await load.stop()

      assert.equal(server.child.exitCode, null, 'the process is still running')
      const during = outcomes.filter((o) => o.started >= faultAt && o.ended <= restoreAt)
      const unavailable = outcomes.filter((o) => o.status === 503)
      const first503 = Math.min(...unavailable.map((o) => o.ended)) - faultAt
      const slowest = Math.max(...during.map((o) => o.ended - o.started))
      const afterHeal = outcomes.filter((o) => o.started >= restoreAt + toHealed)
      const figures = {
        fault, requests: outcomes.length, during: during.length, '503': unavailable.length,
        '500': count(outcomes, (o) => o.status === 500), connectionFailures: count(outcomes, (o) => typeof o.status !== 'number'),
        msToFirst503: first503, msToReady503: toReady503, slowestDuringMs: slowest, msToHealAfterRestore: toHealed,
        okAfterHeal: count(afterHeal, (o) => o.status === 200 || o.status === 201), afterHeal: afterHeal.length
      }
      t.diagnostic(`figures ${JSON.stringify(figures)}`)
      assert.equal(figures['500'], 0, 'no 500')
      assert.equal(figures.connectionFailures, 0, 'every request got an answer')
      assert.ok(unavailable.length > 0, 'the outage was seen')
      for (const o of outcomes) assert.ok([200, 201, 503].includes(o.status as number), `${o.op}: ${o.status}`)
      for (const o of unavailable) assert.match(String(o.retryAfter), /^[1-9]\d*$/)
      // "Within seconds": the query limit is 5 s, connecting 3 s; a generous guard against hangs.
      assert.ok(first503 < 10_000, `first 503 after ${first503} ms`)
      assert.ok(slowest < 12_000, `a request waited ${slowest} ms`)
      assert.ok(afterHeal.length > 0 && figures.okAfterHeal === afterHeal.length, 'everything succeeds again after healing')
    })
  }
})
