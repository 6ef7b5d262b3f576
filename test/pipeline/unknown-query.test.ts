import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import { createPost } from '../posts/fixtures.js'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'

// An operation of the API refuses a query parameter it does not define, naming each one, so a
// misspelt filter (`?authorID=3`) never silently answers the unfiltered list. Routes outside
// /v1 (health checks, the documents) ignore theirs.

const { app, close } = await buildTestApp()
after(close)
const user = await createUser(app)
const admin = await createAdmin(app)
const post = await createPost(app, user)

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

describe('unknown query parameters', () => {
  test('a list names each unknown parameter, with the bad known ones, all at once', async () => {
    assertError(await get('/v1/posts?offset=25&page=3&limit=5'), 400, 'VALIDATION_ERROR', ['offset', 'page'])
    assertError(await get('/v1/posts?authorID=3'), 400, 'VALIDATION_ERROR', ['authorID'])
    assertError(await get('/v1/posts?limit=0&sort=price'), 400, 'VALIDATION_ERROR', ['limit', 'sort'])
    assertError(await get('/v1/products?categories=BOOK&sort=price'), 400, 'VALIDATION_ERROR', ['categories'])
    assertError(await get('/v1/events?since=1', user.auth), 400, 'VALIDATION_ERROR', ['since'])
    assertError(await get(`/v1/users/${user.id}/orders?userId=1`, user.auth), 400, 'VALIDATION_ERROR', ['userId'])
    assertError(await get(`/v1/users/${user.id}?expand=orders`, admin.auth), 400, 'VALIDATION_ERROR', ['expand'])
  })

  test('an operation without query parameters refuses any; an empty one is no parameter', async () => {
    assertError(await get(`/v1/posts/${post.id}?fields=title`), 400, 'VALIDATION_ERROR', ['fields'])
    assertError(await get('/v1/sessions/current?x=1', user.auth), 400, 'VALIDATION_ERROR', ['x'])
    assertError(await app.inject({ method: 'POST', url: '/v1/posts?draft=true', headers: user.auth, payload: { title: 'T', content: 'C' } }), 400, 'VALIDATION_ERROR', ['draft'])
    assertError(await app.inject({ method: 'POST', url: '/v1/posts?draft=1', headers: user.auth, payload: { content: 'C' } }), 400, 'VALIDATION_ERROR', ['draft', 'title'])
    assert.equal((await get(`/v1/posts/${post.id}?`)).statusCode, 200)
    assert.equal((await get('/v1/posts?limit=2')).statusCode, 200)
  })

  test('authentication is still checked first: no token is 401 whatever the query', async () => {
    assertError(await get('/v1/sessions/current?x=1'), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('routes outside /v1 ignore their query', async () => {
    assert.equal((await get('/health/live?probe=lb')).statusCode, 200)
    assert.equal((await get('/errors?x=1')).statusCode, 200)
  })

  test('property: any parameter a route does not define is named, and nothing is a 500', async () => {
    const known = new Set(['limit', 'cursor', 'authorId', 'q', 'sort', 'createdAfter', 'createdBefore'])
    await fc.assert(fc.asyncProperty(
      fc.uniqueArray(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.-]{0,30}$/).filter((n) => !known.has(n) && n !== '__proto__'), { minLength: 1, maxLength: 4 }),
      async (names) => {
        const query = names.map((n) => `${encodeURIComponent(n)}=1`).join('&')
        assertError(await get(`/v1/posts?limit=3&${query}`), 400, 'VALIDATION_ERROR', names)
      }), { numRuns: 100 })
  })
})
