import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser } from '../helper.js'
import { createPost, readPost } from './fixtures.js'

const { app, close } = await buildTestApp()
after(close)

const profile = async (id: number) => (await app.inject({ method: 'GET', url: `/v1/users/${id}/profile` })).json()

describe('posts and their authors', () => {
  test('the profile\'s postCount counts the user\'s real posts, and only theirs', async () => {
    const alice = await createUser(app, { name: 'Alice' })
    const bob = await createUser(app, { name: 'Bob' })
    assert.equal((await profile(alice.id)).postCount, 0)
    const posts = [await createPost(app, alice), await createPost(app, alice), await createPost(app, alice)]
    await createPost(app, bob)
    assert.equal((await profile(alice.id)).postCount, 3)
    assert.equal((await profile(bob.id)).postCount, 1)
    await app.inject({ method: 'DELETE', url: `/v1/posts/${posts[0]!.id}`, headers: alice.auth })
    assert.equal((await profile(alice.id)).postCount, 2)
    // Failed attempts create nothing.
    await app.inject({ method: 'POST', url: '/v1/posts', headers: alice.auth, payload: { title: '', content: 'x' } })
    await app.inject({ method: 'POST', url: '/v1/posts', payload: { title: 'T', content: 'x' } })
    assert.equal((await profile(alice.id)).postCount, 2)
  })

  test('deleting a user deletes their posts, and only theirs', async () => {
    const carol = await createUser(app, { name: 'Carol' })
    const dave = await createUser(app, { name: 'Dave' })
    const carolPosts = [await createPost(app, carol), await createPost(app, carol)]
    await app.inject({ method: 'POST', url: `/v1/posts/${carolPosts[0]!.id}/views` })
    const davePost = await createPost(app, dave)
    const res = await app.inject({ method: 'DELETE', url: `/v1/users/${carol.id}`, headers: carol.auth })
    assert.equal(res.statusCode, 204, res.body)
    for (const post of carolPosts) assertError(await readPost(app, post.id), 404, 'POST_NOT_FOUND')
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/posts?authorId=${carol.id}` })).json(), [])
    const all = (await app.inject({ method: 'GET', url: '/v1/posts?limit=100' })).json() as Array<{ id: number, author: { id: number } }>
    assert.ok(all.every((p) => p.author.id !== carol.id))
    assert.deepEqual((await readPost(app, davePost.id)).json(), davePost)
  })

  test('the author\'s current name shows on every post, in the list and alone', async () => {
    const erin = await createUser(app, { name: 'Erin' })
    const post = await createPost(app, erin)
    const rename = await app.inject({ method: 'PUT', url: `/v1/users/${erin.id}`, headers: erin.auth, payload: { email: erin.email, name: 'Erin B.' } })
    assert.equal(rename.statusCode, 200, rename.body)
    assert.deepEqual((await readPost(app, post.id)).json().author, { id: erin.id, name: 'Erin B.' })
    const listed = (await app.inject({ method: 'GET', url: `/v1/posts?authorId=${erin.id}` })).json()
    assert.deepEqual(listed[0].author, { id: erin.id, name: 'Erin B.' })
  })
})
