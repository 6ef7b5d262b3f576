import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { assertPostShape, createPost, readPost } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const bob = await createUser(app, { name: 'Bob' })
const put = (id: number | string, payload: unknown, headers: Record<string, string> = alice.auth) =>
  app.inject({ method: 'PUT', url: `/v1/posts/${id}`, headers, payload: payload as object })

describe('PUT /v1/posts/{id}', () => {
  test('replaces title and content: 200, the new representation and its ETag', async () => {
    const post = await createPost(app, alice, { title: 'Old', content: 'Old text.' })
    const res = await put(post.id, { title: 'New', content: 'New text.' })
    assert.equal(res.statusCode, 200, res.body)
    const updated = res.json()
    assertPostShape(updated)
    assert.equal(updated.title, 'New')
    assert.equal(updated.content, 'New text.')
    assert.deepEqual(updated.author, post.author)
    assert.equal(updated.createdAt, post.createdAt)
    assert.ok(updated.updatedAt >= post.updatedAt)
    const read = await readPost(app, post.id)
    assert.deepEqual(read.json(), updated)
    assert.equal(res.headers.etag, read.headers.etag)
  })

  test('a client can PUT back what it read; read-only members are ignored, never applied', async () => {
    const post = await createPost(app, alice)
    await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/views` })
    const read = (await readPost(app, post.id)).json()
    const res = await put(post.id, {
      ...read, title: 'Edited', id: 1, author: { id: bob.id, name: 'Bob' }, views: 999999, createdAt: '1999-01-01T00:00:00.000Z', updatedAt: 'not a date'
    })
    assert.equal(res.statusCode, 200, res.body)
    const after = (await readPost(app, post.id)).json()
    assert.equal(after.title, 'Edited')
    assert.equal(after.id, post.id)
    assert.deepEqual(after.author, { id: alice.id, name: 'Alice' })
    assert.equal(after.views, 1)
    assert.equal(after.createdAt, post.createdAt)
    assert.notEqual(after.updatedAt, 'not a date')
  })

  test('unknown members fail and nothing changes', async () => {
    const post = await createPost(app, alice)
    assertError(await put(post.id, { title: 'T', content: 'C', authorId: bob.id, published: true }), 400, 'VALIDATION_ERROR', ['authorId', 'published'])
    assert.deepEqual((await readPost(app, post.id)).json(), post)
  })

  test('no body names title and content; application/merge-patch+json is refused with 415', async () => {
    const post = await createPost(app, alice)
    assertError(await app.inject({ method: 'PUT', url: `/v1/posts/${post.id}`, headers: alice.auth }), 400, 'VALIDATION_ERROR', ['title', 'content'])
    const merge = await app.inject({ method: 'PUT', url: `/v1/posts/${post.id}`, headers: { ...alice.auth, 'content-type': 'application/merge-patch+json' }, payload: '{"title":"T","content":"C"}' })
    assertError(merge, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('replacing with the same values still succeeds', async () => {
    const post = await createPost(app, alice, { title: 'Same', content: 'Same.' })
    const res = await put(post.id, { title: 'Same', content: 'Same.' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().title, 'Same')
  })
})
