import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const del = (id: number | string) => app.inject({ method: 'DELETE', url: `/v1/posts/${id}`, headers: alice.auth })

describe('DELETE /v1/posts/{id}', () => {
  test('204 with an empty body; afterwards the post is gone everywhere', async () => {
    const keep = await createPost(app, alice, { title: 'Keep' })
    const post = await createPost(app, alice, { title: 'Delete me' })
    const res = await del(post.id)
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assertError(await readPost(app, post.id), 404, 'POST_NOT_FOUND')
    assertError(await del(post.id), 404, 'POST_NOT_FOUND')
    assertError(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/views` }), 404, 'POST_NOT_FOUND')
    assertError(await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: alice.auth, payload: { title: 'Back?' } }), 404, 'POST_NOT_FOUND')
    const list = (await app.inject({ method: 'GET', url: '/v1/posts' })).json() as Array<{ id: number }>
    assert.deepEqual(list.map((p) => p.id), [keep.id])
    assert.deepEqual((await readPost(app, keep.id)).json(), keep)
  })

  test('a body sent with DELETE is not needed; a JSON body is ignored', async () => {
    const post = await createPost(app, alice)
    const res = await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}`, headers: alice.auth, payload: { reason: 'ignored' } })
    assert.equal(res.statusCode, 204)
  })

  test('ids are never reused after a delete', async () => {
    const post = await createPost(app, alice)
    await del(post.id)
    const next = await createPost(app, alice)
    assert.ok(next.id > post.id)
  })
})
