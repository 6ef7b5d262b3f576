import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import { plansOf } from '../query-plans.js'
import { buildTestApp, createUser, dialect } from '../helper.js'
import { POST_ORDERS, POST_SORTS, postListing, type PostListQueryType } from '../../src/posts/post.listing.js'
import { listPosts, listPostsQueries } from '../../src/posts/post.repository.js'
import { write } from '../../src/db/write.js'

// The query plan of every sort of GET /v1/posts, alone and under each filter and a search, read
// from the database for the very query the list runs, first page and deep page: never a scan of
// the whole table; the rows come in the sort's order from its index (read until the page is
// full), or from a range of another index (an author's posts, a time range) or from the text
// index (a search) and then sorted. On PostgreSQL sequential scans are priced out, so that the
// plan shows that an index can serve the query on a table of any size.

const { app, close } = await buildTestApp()
after(close)
const authors = [await createUser(app), await createUser(app), await createUser(app)]

before(async () => {
  const rows = Array.from({ length: 2000 }, (_, i) => {
    const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString()
    const words = `${['Red', 'Blue', 'Green'][i % 3]} ${['notebook', 'lamp', 'kettle', 'shoe'][i % 4]}`
    return { author_id: authors[i % 3]!.id, title: `${words} ${i}`, content: `All about the ${words}, part ${i}.`, views: (i * 37) % 500, created_at: at, updated_at: at }
  })
  for (let i = 0; i < rows.length; i += 500) await write(app.db, async (trx) => await trx.insertInto('posts').values(rows.slice(i, i + 500)).execute())
  await write(app.db, async (trx) => await sql`analyze`.execute(trx))
})

const FILTERS = ['', 'authorId=AUTHOR', 'createdAfter=2026-01-01T10:00:00Z&createdBefore=2026-01-01T20:00:00Z', 'authorId=AUTHOR&createdAfter=2026-01-01T10:00:00Z', 'q=notebook', 'q=note*&authorId=AUTHOR', 'q=%22red%20lamp%22']

async function plans (query: string, deep: boolean): Promise<string[][]> {
  const listing = postListing(Object.fromEntries(new URLSearchParams(query.replaceAll('AUTHOR', String(authors[1]!.id)))) as PostListQueryType)
  const order = POST_ORDERS[listing.sort]
  let position
  if (deep) {
    const rows = await listPosts(app.db, dialect, listing, 1000, undefined)
    const row = rows[Math.floor(rows.length / 2)]
    // Tied: the page starts inside a run of equal keys, so every query a deep page can run is shown.
    if (row !== undefined) position = { key: order.readKey(order.keyOf(row))!, id: row.id, tied: true }
  }
  return await plansOf(app, listPostsQueries(app.db, dialect, listing, 21, position))
}

for (const filter of FILTERS) {
  const sorts = filter.startsWith('q=') ? [undefined, ...POST_SORTS] : POST_SORTS
  for (const sort of sorts) {
    const query = [filter, sort === undefined ? '' : `sort=${sort}`].filter((part) => part !== '').join('&')
    test(`plan of ?${query}`, async () => {
      for (const deep of [false, true]) {
        for (const lines of await plans(query, deep)) {
        const text = lines.join('\n')
        const where = `${deep ? 'deep' : 'first'} page of ?${query}:\n${text}`
        const key = POST_ORDERS[sort ?? '-createdAt'].key
        const sortIndexes = filter.includes('authorId') && key === 'created_at' ? 'posts_author_id_created_at_id_idx' : `posts_${key}_id_idx`
        if (dialect === 'sqlite') {
          assert.ok(!lines.some((line) => /^SCAN posts$/.test(line)), `a full scan, ${where}`)
          const inOrder = new RegExp(`USING (COVERING )?INDEX ${sortIndexes}`).test(text) && !text.includes('USE TEMP B-TREE FOR ORDER BY')
          const bounded = /^SEARCH posts USING/m.test(text) || text.includes('posts_search VIRTUAL TABLE INDEX')
          assert.ok(inOrder || bounded, `neither the sort's index in order nor a range of an index, ${where}`)
        } else {
          assert.ok(!text.includes('Seq Scan on posts'), `a full scan, ${where}`)
          const inOrder = new RegExp(`Index Scan( Backward)? using ${sortIndexes}`).test(text) && !/^\s*(->\s*)?Sort\b/m.test(text)
          const bounded = text.includes('Index Cond') || text.includes('post_search_document_idx')
          assert.ok(inOrder || bounded, `neither the sort's index in order nor a range of an index, ${where}`)
        }
        }
      }
    })
  }
}
