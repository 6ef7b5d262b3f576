import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import Sqlite from 'better-sqlite3'
import { Webhook } from 'standardwebhooks'
import { startServer, type ServerProcess } from '../server/process.js'
import { startReceiver } from '../support/webhook-receiver.js'
import { allEvents, allOrders, allPostIds, body, createProduct, logIn, productStock, signUpAndLogIn } from './api-client.js'
import { attempt, json, startLoad, waitFor, type Outcome } from './load.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// SIGKILL under concurrent writes, several rounds, on each database: every write the service
// acknowledged (2xx) is there after the restart, stock plus ordered units stays what it was,
// retrying an unanswered order with its Idempotency-Key creates it at most once, and the SQLite
// file passes integrity_check. Events: after each restart, the feed has an event for exactly the
// changes that are there (an event if and only if its change committed), numbered 1, 2, 3, …
// with no gap; at the end every one of them has reached a webhook endpoint at least once.

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
  const receiver = await startReceiver()
  const env = {
    DATABASE_URL: databaseUrl, ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'root password', SHUTDOWN_GRACE_MS: '0',
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.5,1,1,1,1,1', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_POLL_MS: '100'
  }
  let server = startServer(env)
  let base = await server.listening()
  const admin = await logIn(base, 'root@example.com', 'root password')
  const endpoint = await body(await fetch(`${base}/v1/webhook-endpoints`, json({ url: receiver.url, events: ['post.created', 'order.created'] }, admin)), 201) as { id: number, secret: string }
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

    // An event for each change there, and none for a change that is not.
    const events = await allEvents(base, admin)
    events.forEach((event, i) => { assert.equal(event.sequence, i + 1, 'numbered without gaps') })
    const idsOf = (type: string): number[] => events.filter((e) => e.type === type).map((e) => e.resource.id).sort((a, b) => a - b)
    assert.deepEqual(idsOf('post.created'), (await allPostIds(base, buyer.id)).sort((a, b) => a - b), 'post.created for exactly the posts there')
    assert.deepEqual(idsOf('order.created'), orders.map((o) => o.id).sort((a, b) => a - b), 'order.created for exactly the orders there')
  }
  // At least once: every event of the endpoint's types reaches it, despite the kills mid-send.
  const expected = (await allEvents(base, admin)).filter((e) => e.type === 'post.created' || e.type === 'order.created')
  const deliveredIds = (): Set<string> => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])))
  await waitFor('every event delivered', async () => expected.every((e) => deliveredIds().has(e.id)), 60_000)
  const log = await body(await fetch(`${base}/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=1`, { headers: admin }), 200)
  assert.equal((log as unknown[]).length, 1)
  server.child.kill('SIGTERM')
  assert.equal(await server.exit(), 0)
  await receiver.close()
  // Each delivery verifies as a receiver would check it, and is the event the feed has.
  const webhook = new Webhook(endpoint.secret)
  const byId = new Map(expected.map((e) => [e.id, e]))
  for (const received of receiver.received) {
    const event = webhook.verify(received.body, received.headers as Record<string, string>) as { id: string, sequence: number }
    assert.equal(event.sequence, byId.get(event.id)?.sequence)
  }
  const duplicates = receiver.received.length - deliveredIds().size
  t.diagnostic(`figures ${JSON.stringify({ database: name, rounds: ROUNDS, acknowledgedWrites: acknowledged, lost, posts: posts.size, orders: orderKeys.size, events: expected.length, deliveriesReceived: receiver.received.length, duplicateDeliveries: duplicates, undelivered: expected.filter((e) => !deliveredIds().has(e.id)).length })}`)
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
