import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { write } from '../../src/db/write.js'

// GET /v1/users/{id}/profile: public {id, name, postCount, createdAt, avatar}. Post counting with real
// posts is tested with the posts.

const { app, close } = await buildTestApp()
after(close)

const profile = (id: number | string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `/v1/users/${id}/profile`, headers })

describe('GET /v1/users/{id}/profile', () => {
  test('200 with exactly {id, name, postCount, createdAt, avatar}; postCount 0 and no avatar for a new user', async () => {
    const before = Date.now()
    const user = await createUser(app, { name: 'Profiled' })
    const afterwards = Date.now()
    const res = await profile(user.id)
    assert.equal(res.statusCode, 200)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['avatar', 'createdAt', 'id', 'name', 'postCount'])
    assert.equal(body.avatar, null)
    assert.equal(body.id, user.id)
    assert.equal(body.name, 'Profiled')
    assert.equal(body.postCount, 0)
    assert.match(body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const created = Date.parse(body.createdAt)
    assert.ok(created >= before - 1000 && created <= afterwards + 1000, body.createdAt)
    assert.ok(!res.body.includes(user.email))
  })

  test('createdAt is the stored creation time and does not move on update', async () => {
    const user = await createUser(app)
    const first = (await profile(user.id)).json()
    const put = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Changed' } })
    assert.equal(put.statusCode, 200)
    const second = (await profile(user.id)).json()
    assert.equal(second.createdAt, first.createdAt)
    assert.equal(second.name, 'Changed')
  })

  test('postCount counts the rows of posts with this author only', async () => {
    const user = await createUser(app)
    const other = await createUser(app)
    const now = new Date().toISOString()
    // Raw rows, so that this test depends on the posts table only, not on the posts routes.
    for (const authorId of [user.id, user.id, other.id]) {
      await write(app.db, async (trx) => await sql`insert into posts (author_id, title, content, created_at, updated_at) values (${authorId}, ${'t'}, ${'c'}, ${now}, ${now})`.execute(trx))
    }
    assert.equal((await profile(user.id)).json().postCount, 2)
    assert.equal((await profile(other.id)).json().postCount, 1)
  })

  test('needs no authentication', async () => {
    const user = await createUser(app)
    assert.equal((await profile(user.id)).statusCode, 200)
    assert.equal((await profile(user.id, { authorization: 'Bearer garbage' })).statusCode, 200)
  })

  test('404 USER_NOT_FOUND for a missing user; 400 naming id for a malformed one', async () => {
    assertError(await profile(987654321), 404, 'USER_NOT_FOUND')
    assertError(await profile('abc'), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await profile('0'), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('ETag and 304 with If-None-Match; the tag changes with the name', async () => {
    const user = await createUser(app)
    const first = await profile(user.id)
    const etag = first.headers.etag as string
    assert.match(etag, /^"[^"]+"$/)
    const cached = await profile(user.id, { 'if-none-match': etag })
    assert.equal(cached.statusCode, 304)
    assert.equal(cached.body, '')
    await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Other' } })
    const changed = await profile(user.id, { 'if-none-match': etag })
    assert.equal(changed.statusCode, 200)
    assert.notEqual(changed.headers.etag, etag)
  })
})
