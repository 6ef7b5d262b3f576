import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { startServer, type ServerProcess } from '../server/process.js'
import { allOrders, createProduct, logIn, productStock, signUpAndLogIn } from './api-client.js'
import { attempt, json } from './load.js'
import { pgbouncerMissing, skipWithoutPostgres, startPgBouncer, startPrivatePostgres, type PgBouncer, type PrivatePostgres } from './private-postgres.js'

// PgBouncer in transaction mode between the service and PostgreSQL: with statement_timeout
// ignored as a start-up parameter (and set on the database instead) and the service's named
// prepared statements off (PgBouncer 1.18 cannot keep them: a statement prepared on one server
// connection is then run on another), the service migrates, serves, and keeps its races exact;
// without the first setting no request can reach the database.

const skip = skipWithoutPostgres !== false ? skipWithoutPostgres : pgbouncerMissing !== undefined && process.env.CI === undefined ? pgbouncerMissing : false

describe('behind PgBouncer (transaction pooling)', { skip, timeout: 120_000 }, () => {
  let cluster: PrivatePostgres
  const bouncers: PgBouncer[] = []
  const servers: ServerProcess[] = []

  before(async () => {
    cluster = await startPrivatePostgres()
    const client = new pg.Client({ connectionString: cluster.url })
    await client.connect()
    await client.query("ALTER DATABASE postgres SET statement_timeout = '4s'")
    await client.end()
  })
  after(async () => {
    for (const server of servers) {
      if (server.child.exitCode === null) {
        server.child.kill('SIGTERM')
        await server.exit()
      }
    }
    for (const bouncer of bouncers) bouncer.stop()
    cluster?.destroy()
  })

  test('without ignore_startup_parameters: every connection of the service is refused (readiness 503)', async () => {
    const bouncer = await startPgBouncer(cluster, { ignoreStatementTimeout: false })
    bouncers.push(bouncer)
    // Migrations connect without the time limits, so start-up gets as far as listening; every
    // request's connection carries statement_timeout and is refused.
    const server = startServer({ DATABASE_URL: bouncer.url, SHUTDOWN_GRACE_MS: '0' })
    servers.push(server)
    const base = await server.listening()
    const ready = await fetch(`${base}/health/ready`)
    assert.equal(ready.status, 503)
    assert.match(bouncer.log(), /unsupported startup parameter: statement_timeout/)
    server.child.kill('SIGTERM')
    assert.equal(await server.exit(), 0)
  })

  test('with it and PG_PREPARED_STATEMENTS=false: migrations, 2 instances, exact stock and idempotency races', async () => {
    const bouncer = await startPgBouncer(cluster, { ignoreStatementTimeout: true })
    bouncers.push(bouncer)
    const env = { DATABASE_URL: bouncer.url, PG_PREPARED_STATEMENTS: 'false', ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'root password', SHUTDOWN_GRACE_MS: '0' }
    // One after the other: Kysely's migration lock is a session lock taken outside the
    // migration's transaction, which transaction pooling does not keep on one server connection
    // (docs/SCALING.md), so two instances must not migrate through PgBouncer at once.
    const first = startServer(env)
    servers.push(first)
    const firstBase = await first.listening()
    const second = startServer(env)
    servers.push(second)
    const bases = [firstBase, await second.listening()]
    const admin = await logIn(bases[0]!, 'root@example.com', 'root password')
    const buyer = await signUpAndLogIn(bases[1]!, 'bouncer@example.com')
    const productId = await createProduct(bases[0]!, admin, 10)
    const orders = await Promise.all(Array.from({ length: 30 }, async (_, i) =>
      await attempt('order', `${bases[i % 2]}/v1/orders`, json({ productId, quantity: 1 }, buyer.auth))))
    assert.equal(orders.filter((o) => o.status === 201).length, 10)
    assert.equal(orders.filter((o) => o.status === 409).length, 20)
    assert.equal(await productStock(bases[1]!, productId), 0)

    const other = await createProduct(bases[0]!, admin, 100)
    const keyed = await Promise.all(Array.from({ length: 10 }, async (_, i) =>
      await attempt('order', `${bases[i % 2]}/v1/orders`, json({ productId: other, quantity: 2 }, { ...buyer.auth, 'idempotency-key': 'bounced' }))))
    for (const o of keyed) assert.ok(o.status === 201 || o.status === 409, String(o.status))
    assert.equal(await productStock(bases[0]!, other), 98)
    assert.equal((await allOrders(bases[1]!, buyer.id, buyer.auth)).length, 11)

    // The database-side limit still applies through PgBouncer.
    const client = new pg.Client({ connectionString: bouncer.url })
    await client.connect()
    assert.equal((await client.query('show statement_timeout')).rows[0].statement_timeout, '4s')
    await client.end()
  })
})
