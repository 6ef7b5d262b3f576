import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { listEvents, numberEvents } from '../../src/events/event.repository.js'
import { dialect } from '../helper.js'
import { upgradeDatabase } from '../upgrade-database.js'
import { write } from '../../src/db/write.js'

// The upgrade that moved an event's number out of its row: events written under the old schema
// keep their numbers and their order; on PostgreSQL one committed but not yet numbered is
// numbered after them; new events go on from the highest number.

const upgrade = upgradeDatabase()

test('events numbered before the upgrade keep their numbers; an unnumbered one is numbered after them', async () => {
  const { db } = upgrade.handle
  await migrateTo(db, upgrade.handle.dialect, '007-event-indexes-when-numbered')
  const old = db as unknown as Kysely<any>
  const row = (n: number, sequence: number | null, audience: number | null) => ({
    event_id: `evt_upgrade${n}`, sequence, type: 'post.created', occurred_at: new Date().toISOString(),
    resource_type: 'post', resource_id: n, audience, data: `{"id":${n}}`
  })
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('event_log').values({ id: 1, pruned_through: 0, fanned_out_through: 0 }).onConflict((oc) => oc.doNothing()).execute())
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('events').values([row(1, 4, null), row(2, 5, 7), row(3, 6, null)]).execute())
  if (dialect === 'postgres') await write(old, async (trx) => await (trx as Kysely<any>).insertInto('events').values(row(4, null, null)).execute())
  await write(old, async (trx) => await (trx as Kysely<any>).updateTable('event_log').set({ pruned_through: 3 }).where('id', '=', 1).execute())
  // The highest event id, then deleted: the rebuilt SQLite table must not give it again.
  const { id: highest } = await write(old, async (trx) => await (trx as Kysely<any>).insertInto('events').values(row(9, 7, null)).returning('id').executeTakeFirstOrThrow())
  await write(old, async (trx) => await (trx as Kysely<any>).deleteFrom('events').where('id', '=', highest).execute())

  await migrateToLatest(db, upgrade.handle.dialect)
  await numberEvents(db)
  const feed = await listEvents(db, { after: 0n, limit: 100, types: undefined, reader: 'all' })
  const expected = [['evt_upgrade1', 4n], ['evt_upgrade2', 5n], ['evt_upgrade3', 6n]]
  if (dialect === 'postgres') expected.push(['evt_upgrade4', 7n])
  assert.deepEqual(feed.map((e) => [e.event_id, e.sequence]), expected)
  assert.deepEqual((await listEvents(db, { after: 0n, limit: 100, types: undefined, reader: 8n })).map((e) => e.event_id).includes('evt_upgrade2'), false, 'the audience came along')
  assert.deepEqual((await listEvents(db, { after: 0n, limit: 100, types: undefined, reader: 7n })).map((e) => e.event_id).includes('evt_upgrade2'), true)

  const inserted = await write(db, async (trx) => await trx.insertInto('events').values({ event_id: 'evt_after', type: 'post.created', occurred_at: new Date().toISOString(), resource_type: 'post', resource_id: 10n, audience: null, data: null })
    .returning('id').executeTakeFirstOrThrow())
  assert.ok(inserted.id > BigInt(highest), `a new event id (${inserted.id}) is above every one given before (${highest})`)
  const columns = dialect === 'postgres'
    ? await sql<{ name: string }>`select column_name as name from information_schema.columns where table_name = 'events'`.execute(db)
    : await sql<{ name: string }>`select name from pragma_table_info('events')`.execute(db)
  assert.equal(columns.rows.some((c) => c.name === 'sequence'), false, 'the events table has no sequence column')
})
