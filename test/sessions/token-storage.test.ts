import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { assertError, buildTestApp, createUser, dialect } from '../helper.js'

// The server keeps only a hash of each bearer token: nothing in the database can be replayed.

const { app, close } = await buildTestApp()
after(close)

const TABLES = ['users', 'sessions', 'login_failures']

async function everyValueInTheDatabase (): Promise<string> {
  const dump: unknown[] = []
  for (const table of TABLES) {
    const result = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(app.db)
    dump.push(...result.rows)
  }
  return JSON.stringify(dump, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v)
}

describe('token storage', () => {
  test('the sessions row holds the SHA-256 of the token, never the token', async () => {
    const user = await createUser(app)
    const rows = await app.db.selectFrom('sessions').selectAll().where('user_id', '=', BigInt(user.id)).execute()
    assert.equal(rows.length, 1)
    const row = rows[0]!
    assert.equal(row.token_hash, createHash('sha256').update(user.token).digest('hex'))
    assert.notEqual(row.token_hash, user.token)
  })

  test('no token appears anywhere in the database, in any form a client could send', async () => {
    const user = await createUser(app)
    const tokens = [user.token]
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: user.password } })
      tokens.push(res.json().token)
    }
    // A failed log-in and a request with a bogus token leave no usable trace either.
    await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: user.email, password: 'wrong password' } })
    const dump = await everyValueInTheDatabase()
    for (const token of tokens) {
      assert.ok(!dump.includes(token), `${dialect}: token found in the database`)
      assert.ok(!dump.includes(Buffer.from(token, 'base64url').toString('hex')), 'raw token bytes found')
      assert.ok(!dump.includes(user.password), 'password found')
    }
  })

  test('a stored hash used as a bearer token does not authenticate', async () => {
    const user = await createUser(app)
    const row = await app.db.selectFrom('sessions').select('token_hash').where('user_id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    const res = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${row.token_hash}` } })
    assertError(res, 401, 'AUTHENTICATION_REQUIRED')
  })

  test('the token never appears in a later response other than the current session', async () => {
    const user = await createUser(app)
    for (const url of [`/v1/users/${user.id}`, `/v1/users/${user.id}/profile`]) {
      const res = await app.inject({ method: 'GET', url, headers: user.auth })
      assert.ok(!res.body.includes(user.token))
    }
  })
})
