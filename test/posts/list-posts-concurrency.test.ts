import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, createUser } from '../helper.js'
import { createPost } from './fixtures.js'

// Keyset paging is stable under writes: a page is "older than the cursor post", so posts
// created while a client pages never push older posts into the next page (no repeats), and
// deletions never pull one back past the cursor (no skips).

const { app, url, close } = await buildTestApp()
after(close)

const alice = await createUser(app, { name: 'Alice' })
const bob = await createUser(app, { name: 'Bob' })

function nextOf (link: string | null | undefined): string | undefined {
  return link === null || link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1]
}

async function seed (count: number): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < count; i++) ids.push((await createPost(app, i % 3 === 0 ? bob : alice, { title: `Seed ${i}` })).id)
  return ids.sort((a, b) => b - a)
}

describe('paging while the collection changes', () => {
  test('posts inserted between pages are never repeats or skips of older posts', async () => {
    const older = await seed(30)
    const seen: number[] = []
    let target: string | undefined = '/v1/posts?limit=7'
    let pages = 0
    while (target !== undefined) {
      const res: LightMyRequestResponse = await app.inject({ method: 'GET', url: target })
      assert.equal(res.statusCode, 200)
      seen.push(...(res.json() as Array<{ id: number }>).map((p) => p.id))
      target = nextOf(res.headers.link as string | undefined)
      pages += 1
      // Three new posts appear before the client asks for the next page.
      for (let i = 0; i < 3; i++) await createPost(app, alice, { title: `New during page ${pages}` })
    }
    assert.ok(pages >= 5)
    assert.equal(new Set(seen).size, seen.length, 'no post seen twice')
    assert.deepEqual(seen, older, 'exactly the older posts, newest first')
  })

  test('over real HTTP with inserts running concurrently with every page request', async () => {
    const base = await url()
    const newest = Number(((await (await fetch(`${base}/v1/posts?limit=1`)).json()) as Array<{ id: number }>)[0]!.id)
    const first = await fetch(`${base}/v1/posts?limit=9`)
    const firstPage = ((await first.json()) as Array<{ id: number }>).map((p) => p.id)
    assert.equal(firstPage[0], newest)
    const seen = [...firstPage]
    let target = nextOf(first.headers.get('link'))
    let round = 0
    const insert = (n: number) => fetch(`${base}/v1/posts`, {
      method: 'POST', headers: { ...bob.auth, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Concurrent ${n}`, content: 'x' })
    })
    while (target !== undefined) {
      round += 1
      const [page] = await Promise.all([fetch(`${base}${target}`), ...Array.from({ length: 5 }, (_, i) => insert(round * 10 + i))])
      assert.equal(page.status, 200)
      seen.push(...((await page.json()) as Array<{ id: number }>).map((p) => p.id))
      target = nextOf(page.headers.get('link'))
    }
    const all: number[] = []
    for (let next: string | undefined = '/v1/posts?limit=100'; next !== undefined;) {
      const res = await fetch(`${base}${next}`)
      all.push(...((await res.json()) as Array<{ id: number }>).map((p) => p.id))
      next = nextOf(res.headers.get('link'))
    }
    const expected = all.filter((id) => id <= newest)
    assert.ok(round >= 3)
    assert.equal(new Set(seen).size, seen.length, 'no post seen twice')
    assert.deepEqual(seen, expected, 'every post that existed when paging began, once, newest first')
  })

  test('deleting the post a cursor points at does not break or shift the next page', async () => {
    await seed(12)
    const first = await app.inject({ method: 'GET', url: `/v1/posts?limit=4&authorId=${alice.id}` })
    const firstIds = (first.json() as Array<{ id: number }>).map((p) => p.id)
    const boundary = firstIds[firstIds.length - 1]!
    const del = await app.inject({ method: 'DELETE', url: `/v1/posts/${boundary}`, headers: alice.auth })
    assert.equal(del.statusCode, 204)
    const next = await app.inject({ method: 'GET', url: nextOf(first.headers.link as string)! })
    const nextIds = (next.json() as Array<{ id: number }>).map((p) => p.id)
    assert.ok(nextIds.length > 0)
    assert.ok(nextIds.every((id) => id < boundary))
    const aliceOlder = (await app.inject({ method: 'GET', url: `/v1/posts?limit=100&authorId=${alice.id}` })).json() as Array<{ id: number }>
    assert.deepEqual(nextIds, aliceOlder.map((p) => p.id).filter((id) => id < boundary).slice(0, 4))
  })
})
