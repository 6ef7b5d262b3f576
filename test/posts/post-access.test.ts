import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, sendRaw } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

// Who may write, and the order of checks (docs/api.md): 401, then the whole shape
// (400), then 404, then 403, then 412.

const { app, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const bob = await createUser(app, { name: 'Bob' })
const admin = await createAdmin(app)
const post = await createPost(app, alice, { title: 'Alice writes', content: 'Hers.' })

type Write = 'PUT' | 'PATCH' | 'DELETE'
const WRITES: Write[] = ['PUT', 'PATCH', 'DELETE']
const VALID: Record<Write, object | undefined> = { PUT: { title: 'Taken', content: 'Over.' }, PATCH: { title: 'Taken' }, DELETE: undefined }
const write = (method: Write, id: number | string, headers: Record<string, string>, payload: object | undefined = VALID[method]) =>
  app.inject({ method, url: `/v1/posts/${id}`, headers, ...(payload !== undefined ? { payload } : {}) })

describe('authorization and order of checks on PUT, PATCH and DELETE', () => {
  for (const method of WRITES) {
    test(`${method}: anonymous is 401 before anything else (invalid body, malformed JSON, wrong id, missing post)`, async () => {
      assertError(await write(method, post.id, {}), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await write(method, post.id, {}, { title: '', content: 5, extra: 1 }), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await write(method, 'abc', {}), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await write(method, 999999, {}), 401, 'AUTHENTICATION_REQUIRED')
      assertError(await write(method, post.id, { authorization: 'Bearer not-a-real-token-at-all' }), 401, 'AUTHENTICATION_REQUIRED')
      if (method !== 'DELETE') assertError(await sendRaw(app, method, `/v1/posts/${post.id}`, '{"title":', {}), 401, 'AUTHENTICATION_REQUIRED')
      assert.deepEqual((await readPost(app, post.id)).json(), post)
    })

    test(`${method}: another user's post is 403 FORBIDDEN_POST_ACCESS with a generic message, and nothing changes`, async () => {
      const res = await write(method, post.id, bob.auth)
      assertError(res, 403, 'FORBIDDEN_POST_ACCESS')
      assert.equal(res.json().message, 'You do not have permission to perform this action.')
      assert.deepEqual((await readPost(app, post.id)).json(), post)
    })

    test(`${method}: an admin is no author either: 403`, async () => {
      assertError(await write(method, post.id, admin.auth), 403, 'FORBIDDEN_POST_ACCESS')
      assert.deepEqual((await readPost(app, post.id)).json(), post)
    })

    test(`${method}: a missing post is 404 POST_NOT_FOUND, for anyone`, async () => {
      for (const user of [alice, bob, admin]) assertError(await write(method, 987654, user.auth), 404, 'POST_NOT_FOUND')
    })

    test(`${method}: a wrong id is 400 on field id`, async () => {
      for (const id of ['0', '-1', 'abc', '1.5', '9223372036854775808']) {
        assertError(await write(method, id, alice.auth), 400, 'VALIDATION_ERROR', ['id'])
      }
    })

    test(`${method}: 403 comes before 412 (a stranger with a stale If-Match learns nothing more)`, async () => {
      assertError(await write(method, post.id, { ...bob.auth, 'if-match': '"stale"' }), 403, 'FORBIDDEN_POST_ACCESS')
    })
  }

  for (const method of ['PUT', 'PATCH'] as const) {
    test(`${method}: an invalid body is 400 before existence (a missing post) and before ownership (another's post)`, async () => {
      assertError(await write(method, 987654, alice.auth, { title: '' }), 400, 'VALIDATION_ERROR', method === 'PUT' ? ['title', 'content'] : ['title'])
      assertError(await write(method, post.id, bob.auth, { title: 'a'.repeat(101), content: 'x' }), 400, 'VALIDATION_ERROR', ['title'])
    })

    test(`${method}: a wrong id and a wrong body are reported together`, async () => {
      assertError(await write(method, 'abc', alice.auth, { title: ' ', content: 'ok' }), 400, 'VALIDATION_ERROR', ['id', 'title'])
    })
  }

  test('PATCH: a wrong id and an empty body are reported together', async () => {
    assertError(await write('PATCH', '0', alice.auth, {}), 400, 'VALIDATION_ERROR', ['id', 'body'])
  })

  test('the author may write: PUT, PATCH, then DELETE', async () => {
    const own = await createPost(app, bob)
    assert.equal((await write('PUT', own.id, bob.auth)).statusCode, 200)
    assert.equal((await write('PATCH', own.id, bob.auth)).statusCode, 200)
    assert.equal((await write('DELETE', own.id, bob.auth)).statusCode, 204)
  })

  test('creating needs only a log-in: an admin may create a post of their own', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/posts', headers: admin.auth, payload: { title: 'Admin post', content: 'x' } })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().author.id, admin.id)
  })
})
