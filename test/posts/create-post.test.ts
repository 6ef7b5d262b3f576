import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, sendRaw } from '../helper.js'
import { assertPostShape, readPost } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const bob = await createUser(app, { name: 'Bob' })
const create = (payload: unknown, headers: Record<string, string> = alice.auth) =>
  app.inject({ method: 'POST', url: '/v1/posts', headers, payload: payload as object })

describe('POST /v1/posts', () => {
  test('201, Location, ETag, exactly the representation; the author is the caller', async () => {
    const res = await create({ title: 'Hello', content: 'First post.' })
    assert.equal(res.statusCode, 201)
    const post = res.json()
    assertPostShape(post)
    assert.equal(post.title, 'Hello')
    assert.equal(post.content, 'First post.')
    assert.deepEqual(post.author, { id: alice.id, name: 'Alice' })
    assert.equal(post.views, 0)
    assert.equal(post.createdAt, post.updatedAt)
    assert.equal(res.headers.location, `/v1/posts/${post.id}`)
    const read = await readPost(app, post.id)
    assert.equal(read.statusCode, 200)
    assert.deepEqual(read.json(), post)
    assert.equal(res.headers.etag, read.headers.etag)
  })

  test('read-only members are accepted and ignored: no mass assignment of author, views, id or times', async () => {
    const res = await create({
      title: 'Sneaky', content: 'x', id: 424242, author: { id: bob.id, name: 'Bob' }, views: 1000,
      createdAt: '2000-01-01T00:00:00.000Z', updatedAt: '2000-01-01T00:00:00.000Z'
    })
    assert.equal(res.statusCode, 201, res.body)
    const post = res.json()
    assert.notEqual(post.id, 424242)
    assert.deepEqual(post.author, { id: alice.id, name: 'Alice' })
    assert.equal(post.views, 0)
    assert.notEqual(post.createdAt, '2000-01-01T00:00:00.000Z')
    assert.deepEqual((await readPost(app, post.id)).json(), post)
  })

  test('unknown members fail, each named', async () => {
    assertError(await create({ title: 'T', content: 'C', authorId: bob.id, role: 'ADMIN' }), 400, 'VALIDATION_ERROR', ['authorId', 'role'])
  })

  test('no body at all, or {}, names title and content', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/posts', headers: alice.auth }), 400, 'VALIDATION_ERROR', ['title', 'content'])
    assertError(await create({}), 400, 'VALIDATION_ERROR', ['title', 'content'])
  })

  test('a body that is not a JSON object is 400 on field body', async () => {
    for (const text of ['[]', '"title"', '42', 'null', 'true']) {
      assertError(await sendRaw(app, 'POST', '/v1/posts', text, alice.auth), 400, 'VALIDATION_ERROR', ['body'])
    }
  })

  test('malformed JSON is 400 MALFORMED_JSON; a non-JSON content type is 415; merge-patch is for PATCH only', async () => {
    assertError(await sendRaw(app, 'POST', '/v1/posts', '{"title": "T",', alice.auth), 400, 'MALFORMED_JSON')
    assertError(await app.inject({ method: 'POST', url: '/v1/posts', headers: { ...alice.auth, 'content-type': 'text/plain' }, payload: 'hello' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await sendRaw(app, 'POST', '/v1/posts', '{"title":"T","content":"C"}', { ...alice.auth, 'content-type': 'application/merge-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('a body over the size limit is 413', async () => {
    const res = await create({ title: 'Big', content: 'x'.repeat(2 * 1024 * 1024) })
    assertError(res, 413, 'PAYLOAD_TOO_LARGE')
  })

  test('anonymous: 401 whatever the body (valid, invalid, malformed), and nothing is created', async () => {
    const before = (await app.inject({ method: 'GET', url: `/v1/posts?authorId=${alice.id}&limit=100` })).json().length
    for (const headers of [{} as Record<string, string>, { authorization: 'Bearer nonsense-token-that-is-long-enough' }, { authorization: 'Basic abc' }, { authorization: `Bearer ${alice.token}x` }]) {
      const valid = await create({ title: 'T', content: 'C' }, headers)
      assertError(valid, 401, 'AUTHENTICATION_REQUIRED')
      assert.equal(valid.headers['www-authenticate'], 'Bearer realm="api"')
      assertError(await create({ title: '', content: 5, extra: true }, headers), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await sendRaw(app, 'POST', '/v1/posts', '{not json', headers), 401, 'AUTHENTICATION_REQUIRED')
    }
    const after = (await app.inject({ method: 'GET', url: `/v1/posts?authorId=${alice.id}&limit=100` })).json().length
    assert.equal(after, before)
  })

  test('a logged-out token is 401', async () => {
    const carol = await createUser(app)
    assert.equal((await app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers: carol.auth })).statusCode, 204)
    assertError(await create({ title: 'T', content: 'C' }, carol.auth), 401, 'AUTHENTICATION_REQUIRED')
  })
})
