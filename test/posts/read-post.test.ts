import assert from 'node:assert/strict'
import { hash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { assertPostShape, createPost, readPost } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const post = await createPost(app, alice, { title: 'Readable', content: 'Text.' })

const STRONG_ETAG = /^"[A-Za-z0-9_-]+"$/

describe('GET /v1/posts/{id}', () => {
  test('200 with exactly the representation and a strong ETag; no log-in needed', async () => {
    const res = await readPost(app, post.id)
    assert.equal(res.statusCode, 200)
    assertPostShape(res.json())
    assert.deepEqual(res.json(), post)
    assert.match(String(res.headers.etag), STRONG_ETAG)
    assert.match(String(res.headers['content-type']), /^application\/json/)
  })

  test('the tag is the SHA-1 of exactly the bytes sent, and a write\'s tag is the tag a GET then sends', async () => {
    const created = await app.inject({ method: 'POST', url: '/v1/posts', headers: alice.auth, payload: { title: 'Tagged', content: 'Bytes.' } })
    assert.equal(created.statusCode, 201)
    assert.equal(created.headers.etag, `"${hash('sha1', created.body, 'base64url')}"`)
    const read = await readPost(app, created.json<{ id: number }>().id)
    assert.equal(read.statusCode, 200)
    assert.equal(read.headers.etag, `"${hash('sha1', read.body, 'base64url')}"`)
    assert.equal(read.headers.etag, created.headers.etag)
  })

  test('If-None-Match with the current tag is 304 with no body; weak, listed and * forms match too', async () => {
    const etag = String((await readPost(app, post.id)).headers.etag)
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await readPost(app, post.id, { 'if-none-match': header })
      assert.equal(res.statusCode, 304, header)
      assert.equal(res.body, '')
      assert.equal(res.headers.etag, etag)
    }
  })

  test('If-None-Match with a stale or foreign tag is a full 200', async () => {
    const res = await readPost(app, post.id, { 'if-none-match': '"stale"' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), post)
  })

  test('reading never counts a view', async () => {
    for (let i = 0; i < 5; i++) await readPost(app, post.id)
    assert.equal((await readPost(app, post.id)).json().views, 0)
  })

  test('the ETag changes with every change of the representation: edit, view, author rename', async () => {
    const own = await createPost(app, alice, { title: 'Tagged', content: 'x' })
    const tags = new Set<string>()
    const tag = async () => String((await readPost(app, own.id)).headers.etag)
    tags.add(await tag())
    assert.equal(await tag(), [...tags][0], 'stable while nothing changes')

    await app.inject({ method: 'PATCH', url: `/v1/posts/${own.id}`, headers: alice.auth, payload: { title: 'Tagged again' } })
    tags.add(await tag())
    await app.inject({ method: 'POST', url: `/v1/posts/${own.id}/views` })
    tags.add(await tag())
    const rename = await app.inject({ method: 'PUT', url: `/v1/users/${alice.id}`, headers: alice.auth, payload: { email: alice.email, name: 'Alicia' } })
    assert.equal(rename.statusCode, 200, rename.body)
    const renamed = await readPost(app, own.id)
    assert.equal(renamed.json().author.name, 'Alicia')
    tags.add(String(renamed.headers.etag))
    assert.equal(tags.size, 4)
  })

  test('a missing post is 404 POST_NOT_FOUND, up to the largest id', async () => {
    for (const id of ['999999', '9223372036854775807']) assertError(await readPost(app, id), 404, 'POST_NOT_FOUND')
  })

  test('a wrong id is 400 on field id: 0, -1, abc, 1.5, 2^63, leading zero, exponent, spaces', async () => {
    for (const id of ['0', '-1', 'abc', '1.5', '9223372036854775808', '99999999999999999999', '01', '1e3', '%201', '0x10', '1%00']) {
      assertError(await readPost(app, id), 400, 'VALIDATION_ERROR', ['id'])
    }
  })
})
