import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fc from 'fast-check'
import { finishPage, PAGE_BYTES } from '../../src/http/paging.js'
import { createPost } from '../posts/fixtures.js'
import { buildTestApp, createUser } from '../helper.js'

// A list page stops early, after at least one item, once it holds about 1 MiB of JSON; the Link
// then points on as usual. Replays the attack of a hundred posts of 100,000 emoji each, which made
// one anonymous `GET /v1/posts?limit=100` answer 40 MB (here five such posts, 2 MB in all).

const { app, close } = await buildTestApp()
after(close)
const author = await createUser(app)
const emoji = '\u{1F600}'.repeat(100_000) // 400,000 bytes of UTF-8
const big: Array<{ id: number }> = []
for (let i = 0; i < 5; i++) big.push(await createPost(app, author, { title: `Big ${i}`, content: emoji }))

const list = (url: string) => app.inject({ method: 'GET', url })

describe('list pages are capped at about 1 MiB', () => {
  test('a page of 400 KB posts stops after the one that passes 1 MiB, and Link points on', async () => {
    const first = await list(`/v1/posts?limit=100&authorId=${author.id}`)
    assert.equal(first.statusCode, 200)
    const items = first.json()
    assert.deepEqual(items.map((p: { id: number }) => p.id), [big[4]!.id, big[3]!.id, big[2]!.id])
    assert.ok(first.rawPayload.length < PAGE_BYTES + 450_000, `${first.rawPayload.length} bytes`)
    const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))
    assert.ok(link !== null, 'Link rel="next" is present')
    assert.match(link[1]!, /[?&]limit=100(&|$)/)
    assert.match(link[1]!, new RegExp(`[?&]authorId=${author.id}(&|$)`))

    const second = await list(link[1]!)
    assert.deepEqual(second.json().map((p: { id: number }) => p.id), [big[1]!.id, big[0]!.id])
    assert.equal(second.headers.link, undefined, 'the last page has no Link')
  })

  test('one item larger than the cap is still a page of one', async () => {
    const res = await list(`/v1/posts?limit=1&authorId=${author.id}`)
    assert.equal(res.json().length, 1)
    assert.match(String(res.headers.link), /rel="next"/)
  })

  test('small items: the page holds `limit` of them as before', async () => {
    const other = await createUser(app)
    for (let i = 0; i < 3; i++) await createPost(app, other, { content: 'short' })
    const res = await list(`/v1/posts?limit=2&authorId=${other.id}`)
    assert.equal(res.json().length, 2)
    assert.match(String(res.headers.link), /rel="next"/)
  })
})

describe('the page stops after the same item as when every item is measured', () => {
  // The reference: the JSON size of every item, added up until the cap is passed.
  function referenceLength (items: object[], limit: number): number {
    let bytes = 0
    let count = 0
    for (const item of items.slice(0, limit)) {
      if (count > 0 && bytes >= PAGE_BYTES) break
      bytes += Buffer.byteLength(JSON.stringify(item, (_key, value: unknown) => typeof value === 'bigint' ? value.toString() : value))
      count++
    }
    return count
  }

  test('for items of every size and of characters JSON escapes or widens', () => {
    // A text is a character repeated: the counterexample then prints as {char, n}, not megabytes.
    const text = fc.record({ char: fc.constantFrom('a', '\u0001', '"', '\\', 'é', '\u{1F600}', '\uD800'), n: fc.integer({ min: 0, max: 120_000 }) })
    const specs = fc.array(fc.record({ title: text, content: text }), { minLength: 0, maxLength: 40 })
    fc.assert(fc.property(specs, fc.integer({ min: 1, max: 100 }), (items, limit) => {
      const all = items.map(({ title, content }, i) => ({ id: BigInt(1000 - i), title: title.char.repeat(title.n), content: content.char.repeat(content.n), author: { id: 7n, name: 'A' } }))
      let link: string | undefined
      const reply = { header: (_name: string, value: string) => { link = value } } as unknown as FastifyReply
      const request = { url: '/v1/posts?limit=' + String(limit) } as FastifyRequest
      const page = finishPage(request, reply, all, limit, (row) => row)
      const expected = referenceLength(all, limit)
      assert.equal(page.length, expected)
      assert.equal(link !== undefined, expected < all.length)
    }), { numRuns: 60 })
  })
})
