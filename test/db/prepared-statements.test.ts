import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'kysely'
import { nameStatement } from '../../src/db/statement-names.js'
import { write } from '../../src/db/write.js'
import { findPost, findPostForUpdate, listPosts } from '../../src/posts/post.repository.js'
import { findProductById } from '../../src/products/product.repository.js'
import { postListing } from '../../src/posts/post.listing.js'
import { buildTestApp, dialect } from '../helper.js'

// On PostgreSQL the hot queries of a fixed shape run as named prepared statements, parsed and
// planned once per connection; PG_PREPARED_STATEMENTS=false sends them unnamed, for a pooler
// that cannot keep a connection's statements. A named statement must name its columns.

const postgresOnly = dialect === 'postgres' ? false : 'PostgreSQL only'

/** Runs the hot reads on one connection, then lists that connection's prepared statements. */
async function preparedAfterHotReads (env: Record<string, string>): Promise<Array<{ name: string, statement: string }>> {
  const { app, close } = await buildTestApp(env)
  try {
    return await app.db.connection().execute(async (connection) => {
      assert.equal(await findPost(connection, 1n), undefined)
      assert.equal(await findProductById(connection, 1n), undefined)
      assert.deepEqual(await listPosts(connection, 'postgres', postListing({}), 21, undefined), [])
      assert.deepEqual(await listPosts(connection, 'postgres', postListing({ authorId: '3' }), 21, { key: '2026-11-25T10:00:00.000Z', id: 10n }), [])
      const { rows } = await sql<{ name: string, statement: string }>`select name, statement from pg_prepared_statements order by name`.execute(connection)
      return rows
    })
  } finally {
    await close()
  }
}

describe('prepared statements', () => {
  test('by default, each hot read is a named statement of its connection', { skip: postgresOnly }, async () => {
    const prepared = await preparedAfterHotReads({})
    assert.equal(prepared.length, 4)
    for (const { name, statement } of prepared) {
      assert.match(name, /^hot_\d+$/)
      assert.doesNotMatch(statement, /\*/)
    }
    assert.ok(prepared.some(({ statement }) => /from "products" where "id" = \$1$/.test(statement)))
    assert.ok(prepared.some(({ statement }) => /"posts"\."author_id" = \$1 and \("posts"\."created_at", "posts"\."id"\) < \(\$2, \$3\)/.test(statement)))
  })

  test('inside a transaction too: the row lock and the author\'s name are named statements of its connection', { skip: postgresOnly }, async () => {
    const { app, close } = await buildTestApp()
    try {
      const prepared = await write(app.db, async (trx) => {
        const [author] = await sql<{ id: bigint }>`insert into users (email, name, password_hash, role, created_at, updated_at) values ('a@example.com', 'Ann', 'x', 'USER', now(), now()) returning id`.execute(trx).then((r) => r.rows)
        const [post] = await sql<{ id: bigint }>`insert into posts (author_id, title, content, created_at, updated_at) values (${author!.id}, 'T', 'C', now(), now()) returning id`.execute(trx).then((r) => r.rows)
        assert.equal((await findPostForUpdate(trx, 'postgres', post!.id))?.author_name, 'Ann')
        return (await sql<{ name: string, statement: string }>`select name, statement from pg_prepared_statements order by name`.execute(trx)).rows
      })
      assert.equal(prepared.length, 2)
      assert.ok(prepared.every(({ name }) => /^hot_\d+$/.test(name)))
      assert.ok(prepared.some(({ statement }) => /from "posts" where "posts"\."id" = \$1 for update$/.test(statement)))
      assert.ok(prepared.some(({ statement }) => /^select "users"\."name" from "users" where "users"\."id" = \$1$/.test(statement)))
    } finally {
      await close()
    }
  })

  test('PG_PREPARED_STATEMENTS=false: none', { skip: postgresOnly }, async () => {
    assert.deepEqual(await preparedAfterHotReads({ PG_PREPARED_STATEMENTS: 'false' }), [])
  })

  test('a statement that does not name its columns is refused', () => {
    for (const text of ['select * from "products" where "id" = $1', 'select "posts".* from "posts"', 'insert into "posts" ("title") values ($1) returning *']) {
      assert.throws(() => { nameStatement(text) }, /must name its columns/)
    }
    assert.doesNotThrow(() => { nameStatement('select "id", "name" from "products" where "id" = $1') })
  })
})
