import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { allEvents, allOrders, body, createProduct, logIn, productStock, signUpAndLogIn } from './api-client.js'
import { startReceiver, type Receiver } from '../support/webhook-receiver.js'
import { assertProblem, MiB, rawTries, undiciTries } from '../pipeline/early-answer-client.js'
import { attempt, json, startLoad, waitFor } from './load.js'
import { ADMIN, startCluster, type ClusterProcess } from './cluster-process.js'
import { follow } from '../support/sse-client.js'
import { skipWithoutPostgres, startPrivatePostgres, type PrivatePostgres } from './private-postgres.js'

// Three instances behind HAProxy, started by `npm run cluster` (cluster-process.ts), on
// one PostgreSQL of this test's own: every race is exact across instances, a draining instance
// loses no request, and a killed one is routed around without losing an acknowledged write.

const haproxyMissing = (await new Promise<boolean>((resolve) => {
  const probe = spawn('haproxy', ['-v'], { stdio: 'ignore' })
  probe.once('error', () => { resolve(true) })
  probe.once('exit', () => { resolve(false) })
}))
const skip = skipWithoutPostgres !== false
  ? skipWithoutPostgres
  : haproxyMissing && process.env.CI === undefined ? 'haproxy is not on the PATH (apt-get install haproxy)' : false

const statuses = (list: Array<{ status: unknown }>): Record<string, number> =>
  list.reduce<Record<string, number>>((acc, o) => { acc[String(o.status)] = (acc[String(o.status)] ?? 0) + 1; return acc }, {})

describe('a cluster of 3 instances behind HAProxy (npm run cluster)', { skip, timeout: 180_000 }, () => {
  let pg: PrivatePostgres
  let cluster: ClusterProcess
  let base: string
  let pids: number[] = []
  let admin: Record<string, string>
  let receiver: Receiver

  before(async () => {
    receiver = await startReceiver()
    pg = await startPrivatePostgres()
    cluster = await startCluster({ DATABASE_URL: pg.url, LOGIN_FAILURES_PER_EMAIL: '5', SHUTDOWN_GRACE_MS: '3000' })
    base = cluster.base
    pids = cluster.pids
    assert.equal(pids.length, 3)
    admin = await logIn(base, ADMIN.email, ADMIN.password)
  })
  after(async () => {
    await cluster?.stop()
    pg?.destroy()
    await receiver?.close()
  })

  test('20 simultaneous sign-ups with one e-mail: exactly one 201', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, async () =>
      await attempt('sign-up', `${base}/v1/users`, json({ email: 'twin@example.com', password: 'twin password', name: 'Twin' }))))
    assert.deepEqual(statuses(results), { 201: 1, 409: 19 })
  })

  test('30 orders for the last 10 units: exactly 10 succeed, stock ends at 0', async () => {
    const buyer = await signUpAndLogIn(base, 'stock@example.com')
    const productId = await createProduct(base, admin, 10)
    const results = await Promise.all(Array.from({ length: 30 }, async () =>
      await attempt('order', `${base}/v1/orders`, json({ productId, quantity: 1 }, buyer.auth))))
    assert.deepEqual(statuses(results), { 201: 10, 409: 20 })
    assert.equal(await productStock(base, productId), 0)
  })

  test('10 simultaneous orders with one Idempotency-Key: one order, stock taken once', async () => {
    const buyer = await signUpAndLogIn(base, 'idem@example.com')
    const productId = await createProduct(base, admin, 100)
    const results = await Promise.all(Array.from({ length: 10 }, async () =>
      await attempt('order', `${base}/v1/orders`, json({ productId, quantity: 3 }, { ...buyer.auth, 'idempotency-key': 'one-key' }), (b) => String(b.id))))
    for (const r of results) assert.ok(r.status === 201 || r.status === 409, String(r.status))
    assert.equal(new Set(results.filter((r) => r.created !== undefined).map((r) => r.created)).size, 1, 'every 201 is the same order')
    assert.equal((await allOrders(base, buyer.id, buyer.auth)).length, 1)
    assert.equal(await productStock(base, productId), 97)
  })

  test('100 simultaneous views: the count is exactly 100, each view numbered once', async () => {
    const author = await signUpAndLogIn(base, 'views@example.com')
    const post = await body(await fetch(`${base}/v1/posts`, json({ title: 'v', content: 'v' }, author.auth)), 201) as { id: number }
    const views = await Promise.all(Array.from({ length: 100 }, async () =>
      (await body(await fetch(`${base}/v1/posts/${post.id}/views`, { method: 'POST' }), 200) as { views: number }).views))
    assert.deepEqual([...views].sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1))
  })

  test('10 simultaneous cancels of one order: one succeeds, stock restored once', async () => {
    const buyer = await signUpAndLogIn(base, 'cancel@example.com')
    const productId = await createProduct(base, admin, 50)
    const order = await body(await fetch(`${base}/v1/orders`, json({ productId, quantity: 5 }, buyer.auth)), 201) as { id: number }
    const results = await Promise.all(Array.from({ length: 10 }, async () =>
      await attempt('cancel', `${base}/v1/orders/${order.id}`, { method: 'PATCH', headers: { ...buyer.auth, 'content-type': 'application/json' }, body: JSON.stringify({ status: 'CANCELED' }) })))
    assert.deepEqual(statuses(results), { 200: 1, 409: 9 })
    assert.equal(await productStock(base, productId), 50)
  })

  test('log-in limit per e-mail and client address (5), across instances: exactly 5 guesses checked', async () => {
    const user = await signUpAndLogIn(base, 'guess@example.com')
    const guess = async (): Promise<number> => (await attempt('guess', `${base}/v1/sessions`, json({ email: 'guess@example.com', password: 'wrong guess' }))).status as number
    const burst = await Promise.all(Array.from({ length: 12 }, guess))
    let checked = burst.filter((s) => s === 401).length
    assert.equal(checked + burst.filter((s) => s === 429).length, 12)
    // Whatever the burst left can still be used, one at a time, and not a guess more.
    for (let status = await guess(); status !== 429; status = await guess()) {
      assert.equal(status, 401)
      checked += 1
    }
    assert.equal(checked, 5)
    // The limit holds for the right password too (from this address), on every instance.
    for (let i = 0; i < 3; i++) assert.equal((await attempt('login', `${base}/v1/sessions`, json({ email: 'guess@example.com', password: 'system password' }))).status, 429)
    assert.ok(user.id > 0)
  })

  test('an API key revoked through one instance is refused at once by every instance', async () => {
    const owner = await signUpAndLogIn(base, 'keys@example.com')
    const made = await body(await fetch(`${base}/v1/api-keys`, json({ name: 'cluster', scopes: ['orders:read'] }, owner.auth)), 201) as { id: number, key: string }
    const asKey = { authorization: `Bearer ${made.key}` }
    // The balancer takes turns (roundrobin): 6 requests in a row reach each of the 3 instances twice.
    const round = async (): Promise<number[]> => {
      const out: number[] = []
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${base}/v1/orders`, { headers: asKey })
        await res.arrayBuffer()
        out.push(res.status)
      }
      return out
    }
    assert.deepEqual(await round(), Array(6).fill(200))
    const revoked = await fetch(`${base}/v1/api-keys/${made.id}`, { method: 'DELETE', headers: owner.auth })
    assert.equal(revoked.status, 204)
    assert.deepEqual(await round(), Array(6).fill(401))
  })

  // Answers an instance gives before it has read the body reach the client through HAProxy too:
  // 50 tries per case, each a keep-alive upload (undici) or a raw socket writing slowly.
  const TRIES = 50
  const jsonType = { 'content-type': 'application/json' }
  for (const c of [
    { name: '413 by Content-Length (50 MiB)', upload: { method: 'POST', path: '/v1/users', headers: jsonType, size: 50 * MiB }, status: 413, code: 'PAYLOAD_TOO_LARGE' },
    { name: '413 for a chunked body', upload: { method: 'POST', path: '/v1/users', headers: jsonType, size: 'chunked' as const }, status: 413, code: 'PAYLOAD_TOO_LARGE' },
    { name: '401 on a POST with a body (2 MiB)', upload: { method: 'POST', path: '/v1/posts', headers: jsonType, size: 2 * MiB }, status: 401, code: 'AUTHENTICATION_REQUIRED' },
    { name: '404 with a body (2 MiB)', upload: { method: 'POST', path: '/v1/nowhere', headers: jsonType, size: 2 * MiB }, status: 404, code: 'NOT_FOUND' }
  ]) {
    test(`through the balancer, ${c.name}: ${TRIES} keep-alive uploads, every answer read`, async (t) => {
      const { answers, errors } = await undiciTries(base, c.upload, TRIES)
      t.diagnostic(`figures ${JSON.stringify({ scenario: c.name, tries: TRIES, answers: answers.length, socketErrors: errors.length })}`)
      assert.deepEqual(errors, [])
      for (const [i, answer] of answers.entries()) assertProblem(answer, c.status, c.code, `try ${i}`)
    })
  }

  test(`through the balancer, 413 to a raw socket writing 50 MiB slowly: ${TRIES} tries, every answer read`, async () => {
    const outcomes = await rawTries(Number(new URL(base).port), `POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${50 * MiB}\r\n\r\n`, { total: 50 * MiB }, TRIES)
    for (const [i, outcome] of outcomes.entries()) {
      assert.equal(outcome.errorBeforeAnswer, undefined, `try ${i}`)
      assertProblem(outcome, 413, 'PAYLOAD_TOO_LARGE', `try ${i}`)
      assert.ok(outcome.sentBytes < 50 * MiB, `try ${i}: sent ${outcome.sentBytes}`)
    }
  })

  test('SIGTERM to one instance under load: the balancer drains it, no request fails', async (t) => {
    const writer = await signUpAndLogIn(base, 'drain@example.com')
    const load = startLoad(12, async (w, i) => await attempt('post', `${base}/v1/posts`, json({ title: `d${w}`, content: `${i}` }, writer.auth), (b) => String(b.id)))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    process.kill(pids[0]!, 'SIGTERM')
    await waitFor('the instance exits', async () => /instance 1 \(pid \d+\) exited \(0\)/.test(cluster.output()), 30_000)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const outcomes = await load.stop()
    t.diagnostic(`figures ${JSON.stringify({ scenario: 'instance SIGTERM', requests: outcomes.length, statuses: statuses(outcomes) })}`)
    assert.deepEqual(Object.keys(statuses(outcomes)), ['201'])
  })

  test('SIGKILL to one instance under load: routed around, no acknowledged write lost, every event delivered', async (t) => {
    const writer = await signUpAndLogIn(base, 'kill@example.com')
    const endpoint = await body(await fetch(`${base}/v1/webhook-endpoints`, json({ url: receiver.url, events: ['post.created'] }, admin)), 201) as { id: number }
    // Events from here on are the endpoint's to receive (the earlier tests' were made before it existed).
    const from = (await allEvents(base, admin)).at(-1)?.sequence ?? 0
    // Event streams through the balancer, an administrator's and the writer's, reconnecting as a
    // browser does whenever theirs ends: the killed instance's streams go with it.
    const followers = [follow(`${base}/v1/events?after=${from}`, admin), follow(`${base}/v1/events?after=${from}`, writer.auth)]
    const load = startLoad(12, async (w, i) => await attempt('post', `${base}/v1/posts`, json({ title: `k${w}`, content: `${i}` }, writer.auth), (b) => String(b.id)))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    // The kill is asynchronous: until the process is gone, its sockets still take connections.
    // `npm run cluster` reports the exit once the process (and every socket of it) is gone.
    const gone = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => { reject(new Error('the killed instance was not reported gone within 10 s')) }, 10_000)
      const seen = (): void => {
        if (!/instance 2 \(pid \d+\) exited \(SIGKILL\)/.test(cluster.output())) return
        clearTimeout(timer)
        cluster.child.stdout!.off('data', seen)
        resolve(Date.now())
      }
      cluster.child.stdout!.on('data', seen)
    })
    const killedAt = Date.now()
    process.kill(pids[1]!, 'SIGKILL')
    const goneAt = await gone
    await new Promise((resolve) => setTimeout(resolve, 4000))
    const outcomes = await load.stop()
    const failed = outcomes.filter((o) => o.status !== 201)
    const lastFailure = failed.length === 0 ? killedAt : Math.max(...failed.map((o) => o.ended))
    const acknowledged = outcomes.filter((o) => o.created !== undefined)
    let lost = 0
    for (const o of acknowledged) if ((await fetch(`${base}/v1/posts/${o.created}`)).status !== 200) lost += 1
    // Webhooks: every post.created event reaches the endpoint at least once, the killed
    // instance's deliveries in flight taken over by the others once their lease ran out.
    const events = (await allEvents(base, admin)).filter((e) => e.type === 'post.created' && e.sequence > from)
    const received = (): Set<string> => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])))
    await waitFor('every post.created event delivered', async () => events.every((e) => received().has(e.id)), 60_000)
    const posts = new Set(acknowledged.map((o) => Number(o.created)))
    assert.ok([...posts].every((id) => events.some((e) => e.resource.id === id)), 'an event for every acknowledged post')
    let attempts = 0
    for (let next: string | undefined = `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100`; next !== undefined;) {
      const res: Response = await fetch(`${base}${next}`, { headers: admin })
      const page = await body(res, 200) as Array<{ attempts: number, status: string }>
      attempts += page.reduce((sum, d) => sum + d.attempts, 0)
      next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
    }
    // Each stream saw exactly the feed its reader pulls, across the kill: nothing missed, nothing twice.
    const pulled = [(await allEvents(base, admin)).filter((e) => e.sequence > from), (await allEvents(base, writer.auth)).filter((e) => e.sequence > from)]
    for (const [i, follower] of followers.entries()) await follower.reach(pulled[i]!.at(-1)!.sequence)
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const follower of followers) follower.stop()
    for (const [i, follower] of followers.entries()) assert.deepEqual(follower.sequences, pulled[i]!.map((e) => e.sequence), `stream ${i}: the pull feed's sequences, in order, each once`)
    const duplicates = receiver.received.length - received().size
    const figures = {
      scenario: 'instance SIGKILL', requests: outcomes.length, statuses: statuses(outcomes), acknowledged: acknowledged.length, lost,
      msFromKillToGone: goneAt - killedAt, msFromKillToLastFailure: lastFailure - killedAt,
      webhookEvents: events.length, deliveriesReceived: receiver.received.length, duplicateDeliveries: duplicates, attemptsLogged: attempts,
      streamedEvents: followers.map((f) => f.sequences.length), streamOpenings: followers.map((f) => f.opened)
    }
    t.diagnostic(`figures ${JSON.stringify(figures)}`)
    assert.equal(lost, 0)
    // Only requests the killed instance was holding can fail (HAProxy answers 502 or closes the
    // client's connection), at most one per client: none sent once it was gone, however soon.
    for (const o of failed) {
      assert.ok([502, 503, 'reset', 'failed'].includes(o.status), String(o.status))
      assert.ok(o.started <= goneAt, `a request sent ${o.started - goneAt} ms after the instance was gone failed`)
    }
    assert.ok(failed.length <= 12, `${failed.length} failed`)
    // Each attempt is made by one instance: a duplicate only where the killed instance was
    // sending (at most its 8 in flight), never two instances sending the same attempt.
    assert.ok(duplicates <= 8, `${duplicates} duplicate deliveries`)
    // An attempt is counted when claimed: the killed instance's last claims may not have been sent.
    assert.ok(receiver.received.length <= attempts && attempts - receiver.received.length <= 8, `${attempts} attempts logged, ${receiver.received.length} received`)
    assert.ok(outcomes.some((o) => o.started > killedAt + 2000 && o.status === 201), 'writes go on through the other instances')
    assert.ok(outcomes.filter((o) => o.started > killedAt + 2000).every((o) => o.status === 201), 'after the balancer noticed, nothing fails')
  })

  test('SIGTERM to `npm run cluster` stops HAProxy and every instance, exit 0', async () => {
    const code = await cluster.stop()
    assert.equal(code, 0, cluster.output().slice(-2000))
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), 'instance process is gone')
  })
})
