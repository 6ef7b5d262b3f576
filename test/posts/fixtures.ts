import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { TestUser } from '../helper.js'

// Small helpers shared by the posts tests (test/posts/*.test.ts).

export interface PostBody {
  id: number
  title: string
  content: string
  author: { id: number, name: string }
  views: number
  createdAt: string
  updatedAt: string
}

export const POST_KEYS = ['author', 'content', 'createdAt', 'id', 'images', 'title', 'updatedAt', 'views']
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Creates a post through the API as `user` and returns its representation. */
export async function createPost (app: FastifyInstance, user: TestUser, fields: Partial<{ title: string, content: string }> = {}): Promise<PostBody> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: user.auth,
    payload: { title: fields.title ?? 'A title', content: fields.content ?? 'Some content.' }
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** Reads a post; returns the response (status 200 expected by the caller). */
export async function readPost (app: FastifyInstance, id: number | string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'GET', url: `/v1/posts/${id}`, headers })
}

/** Asserts a post representation's exact shape. */
export function assertPostShape (post: PostBody): void {
  assert.deepEqual(Object.keys(post).sort(), POST_KEYS)
  assert.deepEqual(Object.keys(post.author).sort(), ['id', 'name'])
  assert.equal(typeof post.id, 'number')
  assert.equal(typeof post.views, 'number')
  assert.match(post.createdAt, ISO_MS)
  assert.match(post.updatedAt, ISO_MS)
}
