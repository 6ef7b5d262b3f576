import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

// Views are counted by POST /v1/posts/{id}/views (reading is safe and never counts), with one
// atomic UPDATE in the database.

const { app, url, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const view = (id: number | string, init: Record<string, unknown> = {}) => app.inject({ method: 'POST', url: `/v1/posts/${id}/views`, ...init })

describe('POST /v1/posts/{id}/views', () => {
  test('no log-in, no body: 200 with exactly {views}, one more each time', async () => {
    const post = await createPost(app, alice)
    for (let i = 1; i <= 3; i++) {
      const res = await view(post.id)
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { views: i })
    }
    assert.equal((await readPost(app, post.id)).json().views, 3)
  })

  test('counting a view does not change updatedAt, title or content', async () => {
    const post = await createPost(app, alice)
    await view(post.id)
    assert.deepEqual((await readPost(app, post.id)).json(), { ...post, views: 1 })
  })

  test('a logged-in caller (the author or anyone) counts the same', async () => {
    const post = await createPost(app, alice)
    assert.deepEqual((await view(post.id, { headers: alice.auth })).json(), { views: 1 })
  })

  test('a JSON body is ignored; a non-JSON body is 415; malformed JSON is 400', async () => {
    const post = await createPost(app, alice)
    assert.deepEqual((await view(post.id, { payload: { views: 1000 } })).json(), { views: 1 })
    assertError(await view(post.id, { headers: { 'content-type': 'text/plain' }, payload: 'hi' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await view(post.id, { headers: { 'content-type': 'application/json' }, payload: '{' }), 400, 'MALFORMED_JSON')
    assert.equal((await readPost(app, post.id)).json().views, 1)
  })

  test('a missing post is 404; a wrong id is 400 on field id', async () => {
    assertError(await view(424242), 404, 'POST_NOT_FOUND')
    for (const id of ['0', '-1', 'abc', '1.5', '9223372036854775808']) assertError(await view(id), 400, 'VALIDATION_ERROR', ['id'])
  })

  test('GET on the sub-resource is 405 with Allow: POST', async () => {
    const post = await createPost(app, alice)
    const res = await app.inject({ method: 'GET', url: `/v1/posts/${post.id}/views` })
    assertError(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'POST')
  })

  test('100 simultaneous views over real HTTP add exactly 100, each answer a distinct count', async () => {
    const post = await createPost(app, alice)
    await view(post.id)
    const base = await url()
    const responses = await Promise.all(Array.from({ length: 100 }, () => fetch(`${base}/v1/posts/${post.id}/views`, { method: 'POST' })))
    assert.deepEqual(responses.map((r) => r.status), Array(100).fill(200))
    const counts = await Promise.all(responses.map(async (r) => ((await r.json()) as { views: number }).views))
    assert.deepEqual(counts.sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 2))
    assert.equal((await readPost(app, post.id)).json().views, 101)
  })
})
