import type { Kysely } from 'kysely'
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { write } from '../../src/db/write.js'
import { listEvents, numberEvents, pruneEvents, recordEvent } from '../../src/events/event.repository.js'
import { upgradeDatabase } from '../upgrade-database.js'

// The upgrade that made an event's number its key on SQLite (on PostgreSQL it changes nothing):
// events numbered before it keep their numbers, their ids and their audiences whatever keys they
// had; new events go on from the highest number, and from the last pruned one once every event
// is pruned; down and up again leaves the feed as it was.

const upgrade = upgradeDatabase()

const BEFORE = '012-post-listing'

test('events keep their numbers across the upgrade, and numbers go on, never given twice', async () => {
  const { db, dialect } = upgrade.handle
  await migrateTo(db, dialect, BEFORE)
  const old = db as unknown as Kysely<any>
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('event_log').values({ id: 1, pruned_through: 0, fanned_out_through: 0 }).onConflict((oc) => oc.doNothing()).execute())
  // Keys 1..3 (or whatever the database gives), numbered 11..13 after ten pruned numbers.
  const event = (n: number, audience: number | null) => ({
    event_id: `evt_kept${n}`, type: 'order.created', occurred_at: '2026-01-01T00:00:00.000Z', resource_type: 'order', resource_id: n, audience, data: `{"id":${n}}`
  })
  const rows = await write(old, async (trx) => await (trx as Kysely<any>).insertInto('events').values([event(1, null), event(2, 7), event(3, null)]).returning('id').execute())
  await write(old, async (trx) => await (trx as Kysely<any>).insertInto('event_feed').values(rows.map((r, i) => ({ sequence: 11 + i, event_pk: r.id, audience: i === 1 ? 7 : null }))).execute())
  await write(old, async (trx) => await (trx as Kysely<any>).updateTable('event_log').set({ pruned_through: 10 }).where('id', '=', 1).execute())

  const feed = async (reader: bigint | 'all' = 'all'): Promise<Array<[string, bigint]>> => {
    await numberEvents(db)
    return (await listEvents(db, { after: 0n, limit: 100, types: undefined, reader })).map((e) => [e.event_id, BigInt(e.sequence)])
  }
  const kept: Array<[string, bigint]> = [['evt_kept1', 11n], ['evt_kept2', 12n], ['evt_kept3', 13n]]

  await migrateToLatest(db, dialect)
  assert.deepEqual(await feed(), kept)
  assert.deepEqual(await feed(8n), [kept[0], kept[2]], 'the audience came along')
  assert.deepEqual(await feed(7n), kept)

  const record = async (n: number): Promise<void> => {
    await write(db, async (trx) => { await recordEvent(trx, { type: 'post.created', resourceId: BigInt(n), data: { id: n }, actor: { userId: null, apiKeyId: null } }) })
  }
  await record(4)
  const recorded = await feed()
  assert.deepEqual(recorded.slice(0, 3), kept)
  assert.equal(recorded[3]?.[1], 14n)

  // Down to the schema before and up again: the same feed, ids and numbers.
  await migrateTo(db, dialect, BEFORE)
  await migrateToLatest(db, dialect)
  assert.deepEqual(await feed(), recorded)

  // Every event pruned: the next number is above the last one pruned, not 1.
  await write(db, async (trx) => await trx.updateTable('event_log').set({ fanned_out_through: 14n }).where('id', '=', 1).execute())
  assert.equal(await pruneEvents(db, 0, Date.now() + 60_000), 14n)
  assert.deepEqual(await feed(), [])
  await record(5)
  assert.deepEqual((await feed()).map(([, n]) => n), [15n])
})
