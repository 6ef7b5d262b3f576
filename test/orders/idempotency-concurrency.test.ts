import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { assertError, buildTestApp, createAdmin, createUser, dialect, type TestUser } from '../helper.js'
import { createProduct, postOrder, stockOf } from '../products/fixtures.js'

const { app, url, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)
const other = await createUser(app)

const ordersOf = async (productId: number) => (await app.db.selectFrom('orders').select('id').where('product_id', '=', BigInt(productId)).execute()).length

async function sendAll (who: TestUser, key: string, bodies: unknown[]) {
  const base = await url()
  return await Promise.all(bodies.map(async (body) => {
    const res = await fetch(`${base}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, ...who.auth },
      body: JSON.stringify(body)
    })
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), text: await res.text() }
  }))
}

describe('Idempotency-Key under concurrency (real HTTP)', () => {
  test('12 simultaneous requests with one key: exactly one order; the others replay it', async () => {
    const product = await createProduct(app, admin, { stock: 50 })
    const results = await sendAll(user, `same-${Date.now()}`, Array.from({ length: 12 }, () => ({ productId: product.id, quantity: 2 })))
    assert.ok(results.every((r) => r.status === 201), JSON.stringify(results.map((r) => r.status)))
    assert.equal(results.filter((r) => r.replayed === null).length, 1)
    assert.equal(results.filter((r) => r.replayed === 'true').length, 11)
    assert.equal(new Set(results.map((r) => r.text)).size, 1)
    assert.equal(await ordersOf(product.id), 1)
    assert.equal(await stockOf(app, product.id), 48)
  })

  test('simultaneous requests with one key and different bodies: one order; the rest replay or get 422', async () => {
    const product = await createProduct(app, admin, { stock: 50 })
    const results = await sendAll(user, `mixed-${Date.now()}`, Array.from({ length: 10 }, (_, i) => ({ productId: product.id, quantity: 1 + (i % 2) })))
    const fresh = results.filter((r) => r.status === 201 && r.replayed === null)
    assert.equal(fresh.length, 1)
    for (const r of results.filter((r) => r !== fresh[0])) {
      if (r.status === 201) assert.equal(r.text, fresh[0]!.text)
      else assert.equal(JSON.parse(r.text).code, 'IDEMPOTENCY_KEY_REUSED')
    }
    assert.equal(results.filter((r) => r.status === 422).length, 5)
    assert.equal(await ordersOf(product.id), 1)
  })

  test('keys are scoped to the user: two users with one key place two orders', async () => {
    const product = await createProduct(app, admin, { stock: 50 })
    const key = `shared-${Date.now()}`
    const [a, b] = await Promise.all([sendAll(user, key, [{ productId: product.id, quantity: 1 }]), sendAll(other, key, [{ productId: product.id, quantity: 3 }])])
    assert.equal(a[0]!.status, 201)
    assert.equal(b[0]!.status, 201)
    assert.equal(a[0]!.replayed, null)
    assert.equal(b[0]!.replayed, null)
    assert.equal(JSON.parse(a[0]!.text).userId, user.id)
    assert.equal(JSON.parse(b[0]!.text).userId, other.id)
    assert.equal(await ordersOf(product.id), 2)
  })
})

// PostgreSQL only: another transaction holds the key, as a request still running would. (SQLite
// runs write transactions one at a time, so a request never observes another one mid-way.)
async function holdKey (who: TestUser, key: string, whileHeld: () => Promise<void>): Promise<void> {
  await app.db.transaction().execute(async (trx) => {
    await trx.insertInto('idempotency_keys').values({
      user_id: who.id, key, request_hash: 'in-flight', state: 'IN_PROGRESS', created_at: new Date().toISOString(), expires_at: new Date(Date.now() + 60_000).toISOString()
    }).execute()
    await whileHeld()
    throw new Error('roll back')
  }).catch((error: unknown) => { if ((error as Error).message !== 'roll back') throw error })
}

async function untilWaitingOnLock (): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(app.db)
    if (Number(rows[0]!.n) > 0) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error('the request never waited for the key')
}

describe('Idempotency-Key held by a request still running', { skip: dialect !== 'postgres' && 'PostgreSQL only' }, () => {
  test('a retry waits a few seconds, then gets 409 IDEMPOTENCY_KEY_IN_USE; nothing is created', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const key = `held-${Date.now()}`
    let res: Awaited<ReturnType<typeof postOrder>> | undefined
    await holdKey(user, key, async () => {
      res = await postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
    })
    assertError(res!, 409, 'IDEMPOTENCY_KEY_IN_USE')
    assert.equal(await ordersOf(product.id), 0)
    assert.equal(await stockOf(app, product.id), 5)
  })

  test('when the first request dies (its transaction rolls back), the waiting retry runs and creates the order', async () => {
    const product = await createProduct(app, admin, { stock: 5 })
    const key = `crashed-${Date.now()}`
    let pending: ReturnType<typeof postOrder> | undefined
    await holdKey(user, key, async () => {
      pending = postOrder(app, user, { productId: product.id, quantity: 1 }, { 'idempotency-key': key })
      await untilWaitingOnLock()
    })
    const res = await pending!
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assert.equal(await ordersOf(product.id), 1)
  })
})
