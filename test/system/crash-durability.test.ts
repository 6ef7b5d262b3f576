import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import Sqlite from 'better-sqlite3'
import { startServer, type ServerProcess } from '../server/process.js'
import { allOrders, body, createProduct, logIn, productStock, signUpAndLogIn } from './api-client.js'
import { attempt, json, startLoad, type Outcome } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// SIGKILL under concurrent writes, several rounds, on each database: every write the service
// acknowledged (2xx) is there after the restart, stock plus ordered units stays what it was,
// retrying an unanswered order with its Idempotency-Key creates it at most once, and the SQLite
// file passes integrity_check.

const ROUNDS = 3
const WORKERS = 12
const STOCK = 1_000_000

async function killedRound (server: ServerProcess, step: (worker: number, round: number) => Promise<Outcome>): Promise<Outcome[]> {
  const load = startLoad(WORKERS, step)
  // Kill at a different moment each round, mid-load.
  await new Promise((resolve) => setTimeout(resolve, 800 + Math.floor(Math.random() * 800)))
  server.child.kill('SIGKILL')
  await server.exit()
  return await load.stop()
}

async function rounds (name: string, databaseUrl: string, checkFile: () => void, t: { diagnostic: (s: string) => void }): Promise<void> {
  const env = { DATABASE_URL: databaseUrl, ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'root password', SHUTDOWN_GRACE_MS: '0' }
  let server = startServer(env)
  let base = await server.listening()
  const admin = await logIn(base, 'root@example.com', 'root password')
  const buyer = await signUpAndLogIn(base, `buyer.${name}@example.com`)
  const productId = await createProduct(base, admin, STOCK)
  const posts = new Set<string>()
  const orderKeys = new Map<string, number>()  // Idempotency-Key -> quantity, for every order sent
  const unanswered = new Set<string>()
  let acknowledged = 0
  let lost = 0
  let sequence = 0

  for (let round = 0; round < ROUNDS; round++) {
    const step = async (worker: number, i: number): Promise<Outcome> => {
      if ((worker + i) % 2 === 0) {
        return await attempt('post', `${base}/v1/posts`, json({ title: `r${round}w${worker}`, content: `${i}` }, buyer.auth), (b) => String(b.id))
      }
      const key = `${name}-${round}-${worker}-${sequence++}`
      const quantity = 1 + (i % 3)
      orderKeys.set(key, quantity)
      const outcome = await attempt(`order ${key}`, `${base}/v1/orders`, json({ productId, quantity }, { ...buyer.auth, 'idempotency-key': key }), (b) => String(b.id))
      if (outcome.created === undefined) unanswered.add(key)
      return outcome
    }
    const outcomes = await killedRound(server, step)
    for (const o of outcomes) if (o.op === 'post' && o.created !== undefined) posts.add(o.created)
    acknowledged += outcomes.filter((o) => o.created !== undefined).length
    assert.ok(outcomes.some((o) => typeof o.status !== 'number'), 'the kill cut requests off')
    for (const o of outcomes) assert.ok(typeof o.status !== 'number' || o.status === 201, `${o.op}: ${o.status}`)
    checkFile()

    server = startServer(env)
    base = await server.listening()
    // Every acknowledged post is there.
    for (const id of posts) {
      const res = await fetch(`${base}/v1/posts/${id}`)
      if (res.status !== 200) lost += 1
      await res.arrayBuffer()
    }
    // Retry every order that got no answer, with its key: created now, or replayed, never twice.
    for (const key of unanswered) {
      const res = await fetch(`${base}/v1/orders`, json({ productId, quantity: orderKeys.get(key) }, { ...buyer.auth, 'idempotency-key': key }))
      await body(res, 201)
    }
    unanswered.clear()
    const orders = await allOrders(base, buyer.id, buyer.auth)
    assert.equal(orders.length, orderKeys.size, 'one order per Idempotency-Key')
    const ordered = orders.reduce((sum, o) => sum + o.quantity, 0)
    assert.equal(ordered, [...orderKeys.values()].reduce((a, b) => a + b, 0), 'each order has the quantity its key was sent with')
    assert.equal(await productStock(base, productId) + ordered, STOCK, 'stock + ordered units is constant')
  }
  server.child.kill('SIGTERM')
  assert.equal(await server.exit(), 0)
  t.diagnostic(`figures ${JSON.stringify({ database: name, rounds: ROUNDS, acknowledgedWrites: acknowledged, lost, posts: posts.size, orders: orderKeys.size })}`)
  assert.equal(lost, 0, 'no acknowledged write lost')
}

describe('SIGKILL under concurrent writes', { timeout: 150_000 }, () => {
  test(`SQLite: ${ROUNDS} rounds, nothing acknowledged is lost, integrity_check ok`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'api-crash-'))
    after(() => { rmSync(dir, { recursive: true, force: true }) })
    const file = join(dir, 'app.db')
    await rounds('sqlite', `file:${file}`, () => {
      // Opened read-write as the next start-up would (recovering the WAL), then checked.
      const db = new Sqlite(file)
      try {
        assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }])
        assert.deepEqual(db.pragma('foreign_key_check'), [])
      } finally {
        db.close()
      }
    }, t)
  })

  test(`PostgreSQL (a private cluster): ${ROUNDS} rounds, nothing acknowledged is lost`, { skip: skipWithoutPostgres }, async (t) => {
    const pg: PrivatePostgres = await startPrivatePostgres()
    after(() => { pg.destroy() })
    await rounds('postgres', pg.url, () => {}, t)
  })
})
