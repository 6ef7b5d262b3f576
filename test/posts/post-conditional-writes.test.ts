import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

// If-Match on PUT, PATCH and DELETE (docs/api.md): a stale tag is 412 and nothing
// changes, so two clients editing from the same read cannot lose each other's update.

const { app, url, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const PAYLOAD = { PUT: { title: 'Replaced', content: 'Replaced.' }, PATCH: { title: 'Patched' }, DELETE: undefined }
const write = (method: 'PUT' | 'PATCH' | 'DELETE', id: number, ifMatch: string) => app.inject({
  method, url: `/v1/posts/${id}`, headers: { ...alice.auth, 'if-match': ifMatch }, ...(PAYLOAD[method] !== undefined ? { payload: PAYLOAD[method] } : {})
})
const etagOf = async (id: number) => String((await readPost(app, id)).headers.etag)

describe('If-Match on PUT, PATCH and DELETE', () => {
  for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
    test(`${method}: a stale tag is 412 PRECONDITION_FAILED and nothing changes`, async () => {
      const post = await createPost(app, alice)
      const stale = await etagOf(post.id)
      await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: alice.auth, payload: { content: 'Someone else was first.' } })
      const current = (await readPost(app, post.id)).json()
      for (const tag of [stale, '"made-up"', `W/${await etagOf(post.id)}`]) {
        assertError(await write(method, post.id, tag), 412, 'PRECONDITION_FAILED')
      }
      assert.deepEqual((await readPost(app, post.id)).json(), current)
    })

    test(`${method}: the current tag (alone, in a list, or *) lets the write through`, async () => {
      for (const form of ['plain', 'list', 'star']) {
        const post = await createPost(app, alice)
        const tag = await etagOf(post.id)
        const header = form === 'plain' ? tag : form === 'list' ? `"other", ${tag}` : '*'
        const res = await write(method, post.id, header)
        assert.equal(res.statusCode, method === 'DELETE' ? 204 : 200, `${form}: ${res.body}`)
      }
    })

    test(`${method}: a view counted since the read makes the tag stale`, async () => {
      const post = await createPost(app, alice)
      const tag = await etagOf(post.id)
      await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/views` })
      assertError(await write(method, post.id, tag), 412, 'PRECONDITION_FAILED')
      assert.equal((await readPost(app, post.id)).json().views, 1)
    })
  }

  test('two clients editing from the same read: the first wins, the second is 412 (no lost update)', async () => {
    const post = await createPost(app, alice, { title: 'Shared', content: 'Shared.' })
    const tag = await etagOf(post.id)
    const first = await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: { ...alice.auth, 'if-match': tag }, payload: { title: 'First' } })
    assert.equal(first.statusCode, 200)
    const second = await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: { ...alice.auth, 'if-match': tag }, payload: { content: 'Second' } })
    assertError(second, 412, 'PRECONDITION_FAILED')
    const now = (await readPost(app, post.id)).json()
    assert.deepEqual([now.title, now.content], ['First', 'Shared.'])
    // The tag returned by the winning write is the current one.
    const third = await app.inject({ method: 'PATCH', url: `/v1/posts/${post.id}`, headers: { ...alice.auth, 'if-match': String(first.headers.etag) }, payload: { content: 'Third' } })
    assert.equal(third.statusCode, 200, third.body)
  })

  test('an author rename makes the tag stale too (the tag covers the whole representation)', async () => {
    const post = await createPost(app, alice)
    const tag = await etagOf(post.id)
    await app.inject({ method: 'PUT', url: `/v1/users/${alice.id}`, headers: alice.auth, payload: { email: alice.email, name: 'Renamed' } })
    assertError(await write('PATCH', post.id, tag), 412, 'PRECONDITION_FAILED')
  })

  test('20 concurrent PATCHes with one tag over real HTTP: exactly one wins (3 rounds)', async () => {
    const base = await url()
    // Several rounds: the first one also opens the HTTP connections, which staggers the requests.
    for (let round = 0; round < 3; round++) {
      const post = await createPost(app, alice)
      const tag = await etagOf(post.id)
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${base}/v1/posts/${post.id}`, {
        method: 'PATCH',
        headers: { ...alice.auth, 'if-match': tag, 'content-type': 'application/json' },
        body: JSON.stringify({ title: `Writer ${i}` })
      })))
      const statuses = results.map((r) => r.status)
      assert.equal(statuses.filter((s) => s === 200).length, 1, statuses.join(','))
      assert.equal(statuses.filter((s) => s === 412).length, 19, statuses.join(','))
    }
  })
})
