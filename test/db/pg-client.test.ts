import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { CompiledQuery } from 'kysely'
import pg from 'pg'
import { guardedClient, runOnPool } from '../../src/db/database.js'
import { isDatabaseUnavailable, QueryReadTimeout } from '../../src/db/errors.js'
import { dialect } from '../helper.js'

// The service's node-postgres client answers Kysely's `query(text, values)` itself (pg's
// callback form under a promise of its own) and keeps the client-side time limit with its own
// timer: when the server does not answer in time, the query fails with 'Query read timeout' and
// the connection is dropped, so nothing queued behind it waits.

const postgresOnly = dialect === 'postgres' ? false : 'PostgreSQL only'

/**
 * A pool of guarded clients, and a way to end it that cannot hang: every connection it opened
 * is ended, also one a query never gave back (then the pool's own end would wait forever).
 */
function trackedPool (queryTimeoutMs: number | undefined, config: pg.PoolConfig): { pool: pg.Pool, end: () => Promise<void> } {
  const clients = new Set<pg.Client>()
  const Guarded = guardedClient(false, queryTimeoutMs)
  class Tracked extends Guarded {
    constructor (config?: string | pg.ClientConfig) {
      super(config)
      clients.add(this)
    }
  }
  const pool = new pg.Pool({ ...config, connectionString: process.env.TEST_DATABASE_URL, Client: Tracked })
  const end = async (): Promise<void> => {
    await Promise.all([...clients].map(async (client) => { await client.end().catch(() => {}) }))
    await Promise.race([pool.end(), delay(1000)])
  }
  return { pool, end }
}

async function connect (queryTimeoutMs: number | undefined): Promise<pg.Client> {
  const GuardedClient = guardedClient(false, queryTimeoutMs)
  const client = new GuardedClient({ connectionString: process.env.TEST_DATABASE_URL })
  await client.connect()
  return client
}

describe('the PostgreSQL client', { skip: postgresOnly }, () => {
  test('answers a query as node-postgres does: rows, row count, command', async () => {
    const client = await connect(5000)
    try {
      const result = await client.query('select $1::int as x, $2::text as y', [7, 'seven'])
      assert.deepEqual(result.rows, [{ x: 7, y: 'seven' }])
      assert.equal(result.rowCount, 1)
      assert.equal(result.command, 'SELECT')
      // A server error rejects with the server's code, and the connection stays usable.
      await assert.rejects(client.query('select 1/0', []), (error: { code?: string }) => error.code === '22012')
      assert.deepEqual((await client.query('select 1 as one', [])).rows, [{ one: 1 }])
    } finally {
      await client.end()
    }
  })

  test('a query the server has not answered in time fails, and so does the one queued behind it', async () => {
    const client = await connect(300)
    try {
      const started = Date.now()
      const slow = client.query('select pg_sleep(3)', [])
      const queued = client.query('select 1', [])
      // The error handler answers it with 503.
      await assert.rejects(slow, (error) => error instanceof QueryReadTimeout && error.message === 'Query read timeout' && isDatabaseUnavailable(error))
      await assert.rejects(queued)
      const waited = Date.now() - started
      assert.ok(waited >= 250 && waited < 2500, `gave up after ${waited} ms`)
      // The connection was dropped, not left waiting for the answer.
      await assert.rejects(client.query('select 1', []))
    } finally {
      await client.end().catch(() => {})
    }
  })

  test('without a limit (migrations), a slow query is waited for', async () => {
    const client = await connect(undefined)
    try {
      assert.deepEqual((await client.query('select pg_sleep(0.5), 1 as one', [])).rows, [{ pg_sleep: '', one: 1 }])
    } finally {
      await client.end()
    }
  })

  test('a query run on the pool (runOnPool) gives its connection back, after an error too', async () => {
    // Two connections, and a short wait for one: a query that kept its connection would make
    // the third query wait, and fail.
    const { pool, end } = trackedPool(5000, { max: 2, connectionTimeoutMillis: 1000 })
    try {
      for (let i = 0; i < 6; i++) {
        await assert.rejects(runOnPool(pool, CompiledQuery.raw('select 1/0')), (error: { code?: string }) => error.code === '22012')
      }
      const read = await runOnPool(pool, CompiledQuery.raw('select $1::int as x', [7]))
      assert.deepEqual(read, { numAffectedRows: undefined, rows: [{ x: 7 }] })
      assert.equal(pool.totalCount, pool.idleCount)
    } finally {
      await end()
    }
  })

  test('a query run on the pool that the server has not answered in time fails, and the pool replaces the connection', async () => {
    const { pool, end } = trackedPool(300, { max: 1, connectionTimeoutMillis: 1000 })
    try {
      const started = Date.now()
      await assert.rejects(runOnPool(pool, CompiledQuery.raw('select pg_sleep(3)')), (error) => error instanceof QueryReadTimeout)
      const waited = Date.now() - started
      assert.ok(waited >= 250 && waited < 2500, `gave up after ${waited} ms`)
      assert.deepEqual((await runOnPool(pool, CompiledQuery.raw('select 1 as one'))).rows, [{ one: 1 }])
    } finally {
      await end()
    }
  })
})
