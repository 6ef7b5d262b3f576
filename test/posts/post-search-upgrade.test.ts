import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kysely } from 'kysely'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { postListing } from '../../src/posts/post.listing.js'
import { listPosts } from '../../src/posts/post.repository.js'
import { upgradeDatabase } from '../upgrade-database.js'
import { write } from '../../src/db/write.js'

// Posts written before the upgrade that added search and the new sorts are found and sorted by
// them afterwards: the upgrade indexes the titles and contents already there.

const upgrade = upgradeDatabase()

test('posts written before the upgrade are searchable and sorted after it, and written ones after it too', async () => {
  const { db, dialect } = upgrade.handle
  await migrateTo(db, dialect, '011-order-list-indexes')
  const old = db as unknown as Kysely<any>
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 12, minute)).toISOString()
  const author = await write(old, async (trx) => await (trx as Kysely<any>).insertInto('users').values({ email: 'ann@example.com', name: 'Ann', password_hash: 'x', role: 'USER', created_at: at(0), updated_at: at(0) }).returning('id').executeTakeFirstOrThrow())
  const post = (title: string, content: string, minute: number, views: number) => ({ author_id: author.id, title, content, views, created_at: at(minute), updated_at: at(minute) })
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('posts').values([post('Walnut desk', 'Made by hand.', 1, 5), post('Desk lamp', 'Brass, with a green shade.', 2, 9), post('Garden chair', 'For the desk of the garden.', 3, 0)]).execute())

  await migrateToLatest(db, dialect)
  await write(db, async (trx) => await trx.insertInto('posts').values(post('Standing desk', 'Up and down.', 4, 2)).execute())
  const titles = async (query: Record<string, string>) => (await listPosts(db, dialect, postListing(query), 100, undefined)).map((p) => p.title)
  assert.deepEqual(await titles({ q: 'desk', sort: 'createdAt' }), ['Walnut desk', 'Desk lamp', 'Garden chair', 'Standing desk'])
  assert.deepEqual(await titles({ q: 'brass shade' }), ['Desk lamp'])
  assert.deepEqual(await titles({ sort: '-views' }), ['Desk lamp', 'Walnut desk', 'Standing desk', 'Garden chair'])
  assert.deepEqual(await titles({ authorId: String(author.id) }), ['Standing desk', 'Garden chair', 'Desk lamp', 'Walnut desk'])

  // Down and up again: the index is built anew from the rows.
  await migrateTo(db, dialect, '011-order-list-indexes')
  await migrateToLatest(db, dialect)
  assert.deepEqual(await titles({ q: 'standing' }), ['Standing desk'])
})
