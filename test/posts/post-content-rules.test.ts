import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, sendRaw } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

// post.content: required; non-blank; at most 100,000 code points (this service's cap, see
// docs/posts.md), on create, replace and partial change alike.

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const post = await createPost(app, alice)

type Method = 'POST' | 'PUT' | 'PATCH'
const METHODS: Method[] = ['POST', 'PUT', 'PATCH']
const urlFor = (method: Method) => method === 'POST' ? '/v1/posts' : `/v1/posts/${post.id}`
const send = (method: Method, content: unknown) => app.inject({
  method, url: urlFor(method), headers: alice.auth, payload: method === 'PATCH' ? { content } : { title: 'Title', content }
})

describe('content rules on POST, PUT and PATCH', () => {
  for (const method of METHODS) {
    test(`${method}: 100,000 code points are accepted; 100,001 fail`, async () => {
      const ok = await send(method, '😀'.repeat(100_000))
      assert.equal(ok.statusCode, method === 'POST' ? 201 : 200, ok.body.slice(0, 300))
      assert.equal([...ok.json().content].length, 100_000)
      assertError(await send(method, '😀'.repeat(100_001)), 400, 'VALIDATION_ERROR', ['content'])
      assertError(await send(method, 'x'.repeat(100_001)), 400, 'VALIDATION_ERROR', ['content'])
    })

    test(`${method}: empty, blank and whitespace-only content fails`, async () => {
      for (const content of ['', ' ', '\n\n', '\t \r\n', '\u2028\u2029', '\u00a0']) {
        assertError(await send(method, content), 400, 'VALIDATION_ERROR', ['content'])
      }
    })

    test(`${method}: wrong types fail (number, null, array, object, boolean)`, async () => {
      for (const content of [1, null, [], ['text'], {}, false]) {
        assertError(await send(method, content), 400, 'VALIDATION_ERROR', ['content'])
      }
    })

    test(`${method}: a NUL character or an unpaired surrogate fails on content`, async () => {
      for (const escaped of ['line\\u0000', 'half \\ud83d', '\\udfff']) {
        const text = method === 'PATCH' ? `{"content":"${escaped}"}` : `{"title":"T","content":"${escaped}"}`
        assertError(await sendRaw(app, method, urlFor(method), text, alice.auth), 400, 'VALIDATION_ERROR', ['content'])
      }
    })
  }

  test('content keeps its white space and newlines exactly', async () => {
    const content = '  Line one\n\n\tLine two  \r\n'
    const res = await send('POST', content)
    assert.equal(res.statusCode, 201, res.body)
    assert.equal((await readPost(app, res.json().id)).json().content, content)
  })

  test('both fields wrong are reported together', async () => {
    for (const method of ['POST', 'PUT'] as const) {
      const res = await app.inject({ method, url: urlFor(method), headers: alice.auth, payload: { title: ' ', content: null } })
      assertError(res, 400, 'VALIDATION_ERROR', ['title', 'content'])
    }
    const patch = await app.inject({ method: 'PATCH', url: urlFor('PATCH'), headers: alice.auth, payload: { title: 'a'.repeat(101), content: '' } })
    assertError(patch, 400, 'VALIDATION_ERROR', ['title', 'content'])
  })

  test('PUT requires both members; a missing one is named', async () => {
    const put = (payload: object) => app.inject({ method: 'PUT', url: urlFor('PUT'), headers: alice.auth, payload })
    assertError(await put({ title: 'Only a title' }), 400, 'VALIDATION_ERROR', ['content'])
    assertError(await put({ content: 'Only content' }), 400, 'VALIDATION_ERROR', ['title'])
    assertError(await put({}), 400, 'VALIDATION_ERROR', ['title', 'content'])
  })
})
