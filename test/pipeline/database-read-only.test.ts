import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { assertError, buildTestApp, createUser, dialect } from '../helper.js'

// During a failover, the service's connections can reach a node that is not (or no longer) the
// primary: a standby, or a primary being demoted, answers every write with 25006
// (read_only_sql_transaction). That is "no primary now", not a bug: 503 with Retry-After, and the
// writes succeed again once the database takes writes. Here the database is made read-only, as a
// standby is, and the service's connections are dropped so that it reconnects to it.

const skip = dialect !== 'postgres' ? 'PostgreSQL only: an embedded SQLite file has no standby' : false

async function admin (url: string, statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
  await client.connect()
  try {
    const name = new URL(url).pathname.slice(1)
    for (const statement of statements) await client.query(statement.replaceAll('$db', name))
  } finally {
    await client.end()
  }
}

const dropConnections = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()"

describe('a database that takes no writes (a standby)', { skip }, () => {
  test('writes get 503 with Retry-After, reads go on, and writes resume once it takes writes again', async () => {
    const { app, config, close } = await buildTestApp()
    after(close)
    const user = await createUser(app)
    const post = { title: 'During a failover', content: 'Written to a standby.' }
    const write = async () => await app.inject({ method: 'POST', url: '/v1/posts', headers: { authorization: `Bearer ${user.token}` }, payload: post })

    await admin(config.databaseUrl, ['ALTER DATABASE $db SET default_transaction_read_only = on', dropConnections])
    // The first requests may meet the dropped connections (57P01, also 503); then every write
    // reaches the read-only database.
    for (let i = 0; i < 5; i++) {
      const res = await write()
      assertError(res, 503, 'SERVICE_UNAVAILABLE')
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/)
    }
    const signUp = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: 'standby@example.com', password: 'long enough', name: 'S' } })
    assertError(signUp, 503, 'SERVICE_UNAVAILABLE')
    const read = await app.inject({ method: 'GET', url: `/v1/users/${user.id}` })
    assert.equal(read.statusCode, 200)

    await admin(config.databaseUrl, ['ALTER DATABASE $db RESET default_transaction_read_only', dropConnections])
    let status = 0
    for (let i = 0; i < 5 && status !== 201; i++) status = (await write()).statusCode
    assert.equal(status, 201)
  })
})
