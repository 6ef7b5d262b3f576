import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, sendRaw } from '../helper.js'
import { createPost, readPost, type PostBody } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const patch = (id: number | string, payload: unknown, headers: Record<string, string> = alice.auth) =>
  app.inject({ method: 'PATCH', url: `/v1/posts/${id}`, headers, payload: payload as object })
const MERGE = { ...alice.auth, 'content-type': 'application/merge-patch+json' }

describe('PATCH /v1/posts/{id}', () => {
  test('only title: the title changes, the content stays', async () => {
    const post = await createPost(app, alice, { title: 'Before', content: 'Kept.' })
    const res = await patch(post.id, { title: 'After' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().title, 'After')
    assert.equal(res.json().content, 'Kept.')
    assert.deepEqual((await readPost(app, post.id)).json(), res.json())
    assert.equal(res.headers.etag, (await readPost(app, post.id)).headers.etag)
  })

  test('only content: the content changes, the title stays', async () => {
    const post = await createPost(app, alice, { title: 'Kept', content: 'Before.' })
    const res = await patch(post.id, { content: 'After.' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual([res.json().title, res.json().content], ['Kept', 'After.'])
  })

  test('both members at once', async () => {
    const post = await createPost(app, alice)
    const res = await patch(post.id, { title: 'T2', content: 'C2' })
    assert.deepEqual([res.statusCode, res.json().title, res.json().content], [200, 'T2', 'C2'])
  })

  test('application/merge-patch+json is accepted (with or without charset)', async () => {
    const post = await createPost(app, alice, { title: 'Before', content: 'Kept.' })
    const res = await sendRaw(app, 'PATCH', `/v1/posts/${post.id}`, '{"title":"Merged"}', MERGE)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual([res.json().title, res.json().content], ['Merged', 'Kept.'])
    const charset = await sendRaw(app, 'PATCH', `/v1/posts/${post.id}`, '{"content":"Merged too."}', { ...MERGE, 'content-type': 'application/merge-patch+json; charset=utf-8' })
    assert.equal(charset.statusCode, 200, charset.body)
    assert.equal(charset.json().content, 'Merged too.')
  })

  test('null for a member is 400 on that member (a title or content cannot be removed), in both media types', async () => {
    const post = await createPost(app, alice)
    assertError(await patch(post.id, { title: null }), 400, 'VALIDATION_ERROR', ['title'])
    assertError(await patch(post.id, { content: null }), 400, 'VALIDATION_ERROR', ['content'])
    assertError(await patch(post.id, { title: null, content: null }), 400, 'VALIDATION_ERROR', ['title', 'content'])
    assertError(await sendRaw(app, 'PATCH', `/v1/posts/${post.id}`, '{"content":null}', MERGE), 400, 'VALIDATION_ERROR', ['content'])
    assertError(await patch(post.id, { title: 'Fine', content: null }), 400, 'VALIDATION_ERROR', ['content'])
    assert.deepEqual((await readPost(app, post.id)).json(), post)
  })

  test('a body with no writable member is 400 on field body', async () => {
    const post = await createPost(app, alice)
    assertError(await patch(post.id, {}), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await patch(post.id, { id: post.id, views: 5, author: post.author }), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: alice.auth }), 400, 'VALIDATION_ERROR', ['body'])
    assertError(await sendRaw(app, 'PATCH', `/v1/posts/${post.id}`, '{}', MERGE), 400, 'VALIDATION_ERROR', ['body'])
    const res = await patch(post.id, {})
    assert.match(res.json().errors[0].message, /title, content/)
    assert.deepEqual((await readPost(app, post.id)).json(), post)
  })

  test('unknown members fail, each named (and a body with only unknown members has nothing to change either)', async () => {
    const post = await createPost(app, alice)
    assertError(await patch(post.id, { title: 'T', tags: ['x'] }), 400, 'VALIDATION_ERROR', ['tags'])
    assertError(await patch(post.id, { author_id: 5 }), 400, 'VALIDATION_ERROR', ['author_id', 'body'])
  })

  test('read-only members sent with a writable one are ignored', async () => {
    const post = await createPost(app, alice)
    const res = await patch(post.id, { title: 'Patched', views: 77, id: 1, createdAt: 'x', author: { id: 123 } })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual({ ...(res.json() as PostBody), updatedAt: post.updatedAt }, { ...post, title: 'Patched' })
  })

  test('a body that is not a JSON object is 400 on field body', async () => {
    const post = await createPost(app, alice)
    for (const text of ['[]', '[{"title":"T"}]', '"T"', '1', 'null']) {
      assertError(await sendRaw(app, 'PATCH', `/v1/posts/${post.id}`, text, alice.auth), 400, 'VALIDATION_ERROR', ['body'])
    }
  })
})
