import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import pg from 'pg'
import { haMissing, startHaPostgres } from '../../scripts/ha-postgres.mjs'
import { postgresMissing, startPgBouncer, startPrivatePostgres } from './private-postgres.js'

// A checkout may sit in a folder only its owner can enter (mode 0700, as `mktemp -d` makes and
// as root's home is). Run as root, the tests and `npm run cluster -- --ha` start Patroni,
// PostgreSQL's tools, psql and PgBouncer as the `postgres` user, which cannot enter such a folder:
// a process that kept the checkout as its working directory fails (Patroni's bootstrap cannot
// change into it). Here the whole recipe starts from such a folder, as the working directory of
// this process, and must come up.

const asRoot = process.getuid?.() === 0
const missing = haMissing() ?? postgresMissing
const skip = !asRoot
  ? 'the fault needs processes run as another user: only when the tests run as root'
  : missing !== undefined && process.env.CI === undefined ? missing : false

test('processes run as the postgres user start from a working directory that user cannot enter', { skip, timeout: 120_000 }, async (t) => {
  if (missing !== undefined) throw new Error(missing)
  const checkout = mkdtempSync(join(tmpdir(), 'api-private-checkout-'))
  assert.equal(statSync(checkout).mode & 0o777, 0o700)
  const original = process.cwd()
  process.chdir(checkout)
  t.after(() => { process.chdir(original); rmSync(checkout, { recursive: true, force: true }) })

  // Patroni (two nodes), etcd, HAProxy and psql: the primary answers through the balancer.
  const ha = await startHaPostgres({ nodes: 2 })
  t.after(async () => { await ha.stop({ remove: true }) })
  const primary = await ha.primary()
  assert.ok(primary !== undefined)
  assert.equal(ha.sql(primary, 'select 1').trim(), '1')
  assert.equal(await selectOne(ha.url), 1)

  // initdb and pg_ctl (the private clusters of the system tests), and PgBouncer in front of one.
  const single = await startPrivatePostgres()
  t.after(() => { single.destroy() })
  assert.equal(await selectOne(single.url), 1)
  const bouncer = await startPgBouncer(single, { ignoreStatementTimeout: true })
  t.after(() => { bouncer.stop() })
  assert.equal(await selectOne(bouncer.url), 1)
})

async function selectOne (url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<{ one: number }>('select 1 as one')).rows[0]!.one
  } finally {
    await client.end()
  }
}
