import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { assertError, buildTestApp, createUser, dialect, tokenOf, uniqueEmail } from '../helper.js'
import { write } from '../../src/db/write.js'

// Ids are issued only from 1 to 2^53 - 1 (9007199254740991), so every JSON client reads them
// exactly, and the database enforces the bound; a path id is still matched as an exact 64-bit
// decimal, so a larger one is simply not found (404), never rounded onto another id.

const { app, close } = await buildTestApp()
after(close)
// Made before the users table runs out of ids (the first two tests take it to its last one).
const user = await createUser(app)

const LAST = 9007199254740991n
const PASSWORD = 'big id password'
const overriding = dialect === 'postgres' ? sql`overriding system value` : sql``

async function insertUserWithId (id: bigint): Promise<void> {
  const now = new Date().toISOString()
  await write(app.db, async (trx) => await sql`insert into users (id, email, name, password_hash, role, created_at, updated_at) ${overriding}
    values (${id}, ${uniqueEmail('id')}, ${'Explicit'}, ${'x'}, ${'USER'}, ${now}, ${now})`.execute(trx))
}

/** The next id the users table issues is `next`. */
async function issueNext (next: bigint): Promise<void> {
  await write(app.db, async (trx) => await (dialect === 'postgres'
    ? sql`alter table users alter column id restart with ${sql.raw(next.toString())}`
    : sql`update sqlite_sequence set seq = ${next - 1n} where name = 'users'`).execute(trx))
}

async function refused (statement: Promise<unknown>): Promise<void> {
  await assert.rejects(statement, (error: Error) => {
    assert.match(error.message, /out of range|id_range|maximum value|can only be updated to DEFAULT/i)
    return true
  })
}

describe('the range of issued ids', () => {
  test('the last id, 2^53 - 1, is issued and read exactly, also by JSON.parse', async () => {
    await issueNext(LAST)
    const email = uniqueEmail('last')
    const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: PASSWORD, name: 'Last' } })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.body, `{"id":9007199254740991,"email":"${email}","name":"Last"}`)
    assert.equal(res.json().id, Number.MAX_SAFE_INTEGER)
    assert.equal(res.headers.location, '/v1/users/9007199254740991')
    const read = await app.inject({ method: 'GET', url: '/v1/users/9007199254740991' })
    assert.equal(read.body, '{"id":9007199254740991,"name":"Last"}')
    const session = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password: PASSWORD } })
    assert.match(session.body, /"user":\{"id":9007199254740991,/)
  })

  test('past it the database issues nothing: the next insert fails and adds no row', async () => {
    const now = new Date().toISOString()
    const before = await app.db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
    await refused(write(app.db, async (trx) => await trx.insertInto('users').values({ email: uniqueEmail('over'), name: 'Over', password_hash: 'x', role: 'USER', created_at: now, updated_at: now }).execute()))
    const afterwards = await app.db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
    assert.equal(String(afterwards.n), String(before.n))
  })

  test('the database refuses an explicit id above the bound, in every table that has ids', async () => {
    await refused(insertUserWithId(LAST + 1n))
    await refused(insertUserWithId(9223372036854775807n))
    await insertUserWithId(LAST - 1n)
    const now = new Date().toISOString()
    const statements = [
      sql`insert into posts (id, author_id, title, content, views, created_at, updated_at) ${overriding} values (${LAST + 1n}, ${LAST - 1n}, 't', 'c', 0, ${now}, ${now})`,
      sql`insert into products (id, name, price, category, stock, on_sale, created_at, updated_at) ${overriding} values (${LAST + 1n}, 'p', 1, 'BOOK', 0, 1, ${now}, ${now})`,
      sql`insert into sessions (id, user_id, token_hash, created_at, expires_at) ${overriding} values (${LAST + 1n}, ${LAST - 1n}, 'h', ${now}, ${now})`
    ]
    for (const statement of statements) await refused(write(app.db, async (trx) => await statement.execute(trx)))
  })

  test('an id cannot be moved above the bound either', async () => {
    await refused(write(app.db, async (trx) => await sql`update users set id = ${LAST + 1n} where id = ${LAST - 1n}`.execute(trx)))
  })

  test('path ids stay exact 64-bit decimals: a larger valid id is 404, never rounded', async () => {
    // 9007199254740993 reads as 9007199254740992 through a double, and 9007199254740992.0 as 2^53;
    // neither may find user 2^53 - 1 or anything else.
    for (const id of ['9007199254740992', '9007199254740993', '9223372036854775807']) {
      assertError(await app.inject({ method: 'GET', url: `/v1/users/${id}` }), 404, 'USER_NOT_FOUND')
      assertError(await app.inject({ method: 'GET', url: `/v1/users/${id}/profile` }), 404, 'USER_NOT_FOUND')
      assertError(await app.inject({ method: 'GET', url: `/v1/posts/${id}` }), 404, 'POST_NOT_FOUND')
      assertError(await app.inject({ method: 'GET', url: `/v1/products/${id}` }), 404, 'PRODUCT_NOT_FOUND')
    }
    assertError(await app.inject({ method: 'GET', url: '/v1/users/9223372036854775808' }), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await app.inject({ method: 'GET', url: '/v1/orders/9007199254740993', headers: user.auth }), 404, 'ORDER_NOT_FOUND')
    const put = await app.inject({ method: 'PUT', url: '/v1/users/9007199254740992', headers: user.auth, payload: { email: user.email, name: 'x' } })
    assertError(put, 404, 'USER_NOT_FOUND')
    assert.ok(await tokenOf(app, user.email, user.password))
  })

  test('a body id (productId) is accepted up to 2^53 - 1 and refused above', async () => {
    const order = (productId: number) => app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId, quantity: 1 } })
    assertError(await order(Number.MAX_SAFE_INTEGER), 404, 'PRODUCT_NOT_FOUND')
    assertError(await order(2 ** 53), 400, 'VALIDATION_ERROR', ['productId'])
  })
})

