import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, sendRaw } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

// post.title: required; non-blank; at most 100 characters (Unicode code points), on create,
// replace and partial change alike.

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const post = await createPost(app, alice, { title: 'Original', content: 'Original content.' })

type Method = 'POST' | 'PUT' | 'PATCH'
const METHODS: Method[] = ['POST', 'PUT', 'PATCH']
const urlFor = (method: Method) => method === 'POST' ? '/v1/posts' : `/v1/posts/${post.id}`
const send = (method: Method, title: unknown) => app.inject({
  method, url: urlFor(method), headers: alice.auth, payload: method === 'PATCH' ? { title } : { title, content: 'Body.' }
})

describe('title rules on POST, PUT and PATCH', () => {
  for (const method of METHODS) {
    test(`${method}: 100 code points are accepted (ASCII and emoji), stored and returned exactly`, async () => {
      for (const title of ['a'.repeat(100), '😀'.repeat(100), 'é'.repeat(99) + '😀']) {
        const res = await send(method, title)
        assert.equal(res.statusCode, method === 'POST' ? 201 : 200, res.body)
        assert.equal(res.json().title, title)
        assert.equal((await readPost(app, res.json().id)).json().title, title)
      }
    })

    test(`${method}: 101 code points fail on title`, async () => {
      for (const title of ['a'.repeat(101), '😀'.repeat(101), 'a'.repeat(100) + '😀']) {
        assertError(await send(method, title), 400, 'VALIDATION_ERROR', ['title'])
      }
    })

    test(`${method}: empty, blank and whitespace-only titles fail`, async () => {
      for (const title of ['', ' ', '   ', '\t', '\n', ' \t\r\n ', '\u00a0', '\u2003\u3000', '\ufeff']) {
        assertError(await send(method, title), 400, 'VALIDATION_ERROR', ['title'])
      }
    })

    test(`${method}: wrong types fail (number, null, array, object, boolean)`, async () => {
      for (const title of [42, 0, null, [], ['T'], { text: 'T' }, true]) {
        assertError(await send(method, title), 400, 'VALIDATION_ERROR', ['title'])
      }
    })

    test(`${method}: a NUL character or an unpaired surrogate fails on title`, async () => {
      for (const escaped of ['A\\u0000B', '\\u0000', 'A\\ud800', '\\udc00B', '\\ude00\\ud83d']) {
        const text = method === 'PATCH' ? `{"title":"${escaped}"}` : `{"title":"${escaped}","content":"Body."}`
        assertError(await sendRaw(app, method, urlFor(method), text, alice.auth), 400, 'VALIDATION_ERROR', ['title'])
      }
    })
  }

  test('valid Unicode is stored exactly: combining marks, RTL marks, escaped emoji, a leading space', async () => {
    for (const title of ['e\u0301te\u0301', '\u202bשלום\u202c', ' spaced ', 'A\u200bB', '👩‍👩‍👧‍👦 family']) {
      const res = await send('POST', title)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal((await readPost(app, res.json().id)).json().title, title)
    }
    const raw = await sendRaw(app, 'POST', '/v1/posts', '{"title":"\\ud83d\\ude00 ok","content":"Body."}', alice.auth)
    assert.equal(raw.statusCode, 201, raw.body)
    assert.equal(raw.json().title, '😀 ok')
  })

  test('a failed write changes nothing', async () => {
    const before = (await readPost(app, post.id)).json()
    assertError(await send('PUT', ''), 400, 'VALIDATION_ERROR', ['title'])
    assertError(await send('PATCH', 'a'.repeat(101)), 400, 'VALIDATION_ERROR', ['title'])
    assert.deepEqual((await readPost(app, post.id)).json(), before)
  })
})
