import { randomFillSync } from 'node:crypto'
import { sql, type CompiledQuery, type Insertable } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import { sqliteHandleOf } from '../db/database.js'
import type { Db, Executor } from '../db/schema.js'
import { afterCommit, handleOf, write } from '../db/write.js'
import { nowIso } from '../db/types.js'
import { eventsCommitted } from './committed.js'
import type { EventRow, EventTable } from './event.table.js'
import { resourceTypeOf, type EventType } from './event.types.js'
import type { Actor } from './actor.js'

// The outbox: an event is a row written by the transaction of its change, so it exists if and
// only if the change committed. Its place in the feed (`sequence`, read from `event_feed`) is
// given as it commits:
//
// - SQLite: writers hold the database's write lock in turn (BEGIN IMMEDIATE), so the next number
//   taken at the insert is also the commit order; it is the event's own key, and `event_feed` a
//   view of the events (migration 013).
// - PostgreSQL: concurrent transactions commit in any order, so a number taken at the insert
//   could become visible after a higher one a reader has already passed. The event is inserted
//   with a row in `event_pending`; numberEvents() later numbers every committed pending event,
//   one batch at a time under an advisory lock, and readers only read numbered events. A reader
//   that has seen N has therefore seen everything up to N, and whatever commits later gets a
//   number above N. (Numbering inserts narrow rows: the event row is never written again.)
//
// Numbers go on from the highest one used, or, once pruning has removed every event, from the
// last one pruned: a number is never given twice.

export interface NewEvent {
  type: EventType
  resourceId: bigint
  /** The one user who may read it besides administrators; undefined: every user. */
  audience?: bigint
  /** The resource's representation after the change; undefined for a deletion. */
  data?: unknown
  /** Who made the change (actor.ts). */
  actor: Actor
}

// A string that needs no escaping in JSON: written between quotes as it is.
const PLAIN = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/

/**
 * JSON text of a representation, its BigInt ids written as JSON numbers, as the API sends them:
 * what `JSON.stringify` writes (member order, escapes, `toJSON`, undefined members left out),
 * without the replacer callback JSON.stringify would need for BigInts, which made the event's
 * text a third of what recording an event cost a write.
 */
export function representationJson (value: unknown): string {
  switch (typeof value) {
    case 'string': return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value)
    case 'bigint': return value.toString()
    case 'number': case 'boolean': return JSON.stringify(value)
    case 'object': {
      if (value === null) return 'null'
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return representationJson((value as { toJSON: () => unknown }).toJSON())
      if (Array.isArray(value)) return `[${value.map((item) => item === undefined || typeof item === 'function' ? 'null' : representationJson(item)).join(',')}]`
      let text = ''
      for (const key of Object.keys(value)) {
        const member = (value as Record<string, unknown>)[key]
        if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue
        text += `${text === '' ? '' : ','}${representationJson(key)}:${representationJson(member)}`
      }
      return `{${text}}`
    }
    default: return 'null'
  }
}

// Event ids are drawn from a pool of random bytes refilled 256 ids at a time (one call into the
// system's generator per refill, as Node's own randomUUID does).
const ID_BYTES = 16
const pool = Buffer.alloc(ID_BYTES * 256)
let drawn = pool.length

/** `evt_` and 22 characters: 128 random bits. */
export function newEventId (): string {
  if (drawn === pool.length) {
    randomFillSync(pool)
    drawn = 0
  }
  const id = 'evt_' + pool.toString('base64url', drawn, drawn + ID_BYTES)
  drawn += ID_BYTES
  return id
}

function isSqlite (executor: Executor): boolean {
  const handle = handleOf(executor)
  return handle !== undefined && sqliteHandleOf(handle) !== undefined
}

/** An event's column values, in the order of an insert (here and in events/recorded-write.ts). */
export type Values = [eventId: string, type: string, occurredAt: string, resourceType: string, resourceId: bigint, audience: bigint | null, data: string | null, actorUserId: bigint | null, actorApiKeyId: bigint | null]

export function eventValues (event: NewEvent, now: string): Values {
  return [newEventId(), event.type, now, resourceTypeOf(event.type), event.resourceId, event.audience ?? null,
    event.data === undefined ? null : representationJson(event.data), event.actor.userId, event.actor.apiKeyId]
}

/** Tells the dispatcher of the executor's database, once the executor's transaction commits, that events were recorded. */
export function announceEvents (executor: Executor): void {
  const handle = handleOf(executor)
  if (handle !== undefined) afterCommit(executor, () => { eventsCommitted(handle) })
}

/**
 * SQLite: the event, its key the next number, taken in the transaction of its insert: one above
 * the highest key, or above the last number pruned once every event is pruned.
 */
const insertNumberedEvent = precompiled((db: Executor, ...[eventId, type, occurredAt, resourceType, resourceId, audience, data, actorUserId, actorApiKeyId]: Values) =>
  db.insertInto('events').values({
    id: sql<bigint>`(select coalesce(max(id), (select pruned_through from event_log where id = 1)) + 1 from events)`,
    event_id: eventId, type, occurred_at: occurredAt, resource_type: resourceType, resource_id: resourceId, audience, data, actor_user_id: actorUserId, actor_api_key_id: actorApiKeyId
  } as unknown as Insertable<EventTable>))

/** PostgreSQL: the event and its pending row, in one statement. */
const insertPending = precompiled((db: Executor, ...[eventId, type, occurredAt, resourceType, resourceId, audience, data, actorUserId, actorApiKeyId]: Values) =>
  db.with('recorded', (db) => db.insertInto('events')
    .values({ event_id: eventId, type, occurred_at: occurredAt, resource_type: resourceType, resource_id: resourceId, audience, data, actor_user_id: actorUserId, actor_api_key_id: actorApiKeyId })
    .returning(['id', 'audience']))
    .insertInto('event_pending').columns(['event_pk', 'audience']).expression((eb) => eb.selectFrom('recorded').select(['id', 'audience'])))

/** SQLite: the insert of an event, its key the next number (run inside the transaction of its change). */
export function numberedEventInsert (executor: Executor, event: NewEvent, now: string): CompiledQuery {
  return insertNumberedEvent(executor, ...eventValues(event, now))
}

/** Records an event inside the transaction of its change (an executor that is not a transaction is refused). */
export async function recordEvent (trx: Executor, event: NewEvent, now = nowIso()): Promise<void> {
  if (!trx.isTransaction) throw new Error('an event is recorded inside the transaction of its change')
  const values = eventValues(event, now)
  if (isSqlite(trx)) {
    await execute(trx, insertNumberedEvent(trx, ...values))
  } else {
    await execute(trx, insertPending(trx, ...values))
  }
  announceEvents(trx)
}

// Any fixed 64-bit key; it names the sequencer's lock among the advisory locks of the database.
const SEQUENCER_LOCK = 0x65766e74_73657121n
/** PostgreSQL: the channel on which numbering announces new events to every instance (event streams). */
export const EVENTS_CHANNEL = 'events'

/**
 * PostgreSQL: gives the committed pending events the next numbers, in the order of their ids,
 * in one transaction under an advisory lock (see the top of this file). SQLite: nothing to do.
 */
export async function numberEvents (db: Db): Promise<void> {
  if (isSqlite(db)) return
  const pending = await sql`select 1 from event_pending limit 1`.execute(db)
  if (pending.rows.length === 0) return
  await write(db, async (trx) => {
    // The lock is taken by its own statement: the next statement's snapshot, taken after, then
    // sees the numbers the previous holder committed and the pending rows it deleted.
    await sql`select pg_advisory_xact_lock(${SEQUENCER_LOCK})`.execute(trx)
    // It reads no event row: the pending row carries what the feed's row needs.
    const numbered = await sql`with taken as (delete from event_pending returning event_pk, audience),
        base as (select coalesce((select max(sequence) from event_feed), (select pruned_through from event_log where id = 1)) as n)
      insert into event_feed (sequence, event_pk, audience)
      select base.n + row_number() over (order by taken.event_pk), taken.event_pk, taken.audience
      from taken cross join base`.execute(trx)
    // Delivered at the commit, to every instance's event streams.
    if ((numbered.numAffectedRows ?? 0n) > 0n) await sql`select pg_notify(${EVENTS_CHANNEL}, '')`.execute(trx)
  })
}

export interface FeedQuery {
  after: bigint
  limit: number
  /** Only these types; undefined: every type. */
  types: string[] | undefined
  /** 'all' for an administrator, else the reader's id (their events and the public ones). */
  reader: bigint | 'all'
}

/** A page of the feed's order joined with its events (the feed's and the fan-out's query). */
function feedQuery (executor: Executor, after: bigint, limit: number) {
  return executor.selectFrom('event_feed as f').innerJoin('events as e', 'e.id', 'f.event_pk')
    .select(['e.event_id', 'f.sequence', 'e.type', 'e.occurred_at', 'e.resource_type', 'e.resource_id', 'e.audience', 'e.data', 'e.actor_user_id', 'e.actor_api_key_id'])
    .where('f.sequence', '>', after)
    .orderBy('f.sequence')
    .limit(limit)
}

/** The query of a feed page (also what the benchmark explains). */
export function listEventsQuery (db: Db, query: FeedQuery) {
  let select = feedQuery(db, query.after, query.limit)
  const { reader, types } = query
  if (reader !== 'all') select = select.where((eb) => eb.or([eb('f.audience', 'is', null), eb('f.audience', '=', reader)]))
  if (types !== undefined) select = select.where('e.type', 'in', types)
  return select
}

/** A page of the feed: numbered events after `after`, oldest first. */
export async function listEvents (db: Db, query: FeedQuery): Promise<EventRow[]> {
  return await listEventsQuery(db, query).execute()
}

/** Numbered events after `after`, any audience, oldest first, at most `limit` (the event streams' hub). */
export async function latestEvents (executor: Executor, after: bigint, limit: number): Promise<EventRow[]> {
  return await feedQuery(executor, after, limit).execute()
}

/** Numbered events after `after` and up to `through`, any audience, oldest first (the dispatcher's fan-out). */
export async function eventsAfter (executor: Executor, after: bigint, through: bigint, limit: number): Promise<EventRow[]> {
  return await feedQuery(executor, after, limit).where('f.sequence', '<=', through).execute()
}

export interface EventLog {
  prunedThrough: bigint
  fannedOutThrough: bigint
}

export async function readEventLog (executor: Executor): Promise<EventLog> {
  const row = await executor.selectFrom('event_log').select(['pruned_through', 'fanned_out_through']).where('id', '=', 1).executeTakeFirstOrThrow()
  return { prunedThrough: BigInt(row.pruned_through), fannedOutThrough: BigInt(row.fanned_out_through) }
}

/**
 * Deletes events older than the retention period (only those already made into deliveries),
 * and the finished deliveries as old; records how far the feed was pruned. The cut is made
 * before the first event, in feed order, that is younger than the period: an event numbered
 * after a younger one waits for it.
 */
export async function pruneEvents (db: Db, retentionMs: number, now = Date.now()): Promise<bigint> {
  const cutoff = new Date(now - retentionMs).toISOString()
  return await write(db, async (trx) => {
    const log = await lockEventLog(trx)
    // Reads the feed from the last cut in order, up to the first young event: only the events
    // about to be deleted, and one more.
    const young = await trx.selectFrom('event_feed as f').innerJoin('events as e', 'e.id', 'f.event_pk').select('f.sequence')
      .where('f.sequence', '>', log.prunedThrough).where('f.sequence', '<=', log.fannedOutThrough).where('e.occurred_at', '>=', cutoff)
      .orderBy('f.sequence').limit(1).executeTakeFirst()
    const through = young === undefined ? log.fannedOutThrough : BigInt(young.sequence) - 1n
    if (through > log.prunedThrough) {
      if (isSqlite(trx)) {
        // The feed is a view there: an event's number is its key.
        await trx.deleteFrom('events').where('id', '<=', through).execute()
      } else {
        await trx.deleteFrom('events').where('id', 'in', (eb) => eb.selectFrom('event_feed').select('event_pk').where('sequence', '<=', through)).execute()
        await trx.deleteFrom('event_feed').where('sequence', '<=', through).execute()
      }
      await trx.updateTable('event_log').set({ pruned_through: through }).where('id', '=', 1).execute()
    }
    await trx.deleteFrom('webhook_deliveries').where('created_at', '<', cutoff).where('status', '!=', 'PENDING').execute()
    return through > log.prunedThrough ? through : log.prunedThrough
  })
}

/** Whether a numbered event lies past the fan-out mark (one indexed look, no event read). */
export async function eventsToFanOut (executor: Executor): Promise<boolean> {
  // Ordered, so the plan is the key's range whatever the table's statistics say (unordered, a
  // plan made while the table was small scanned it whole).
  const next = await executor.selectFrom('event_feed').select('sequence')
    .where('sequence', '>', (eb) => eb.selectFrom('event_log').select('fanned_out_through').where('id', '=', 1))
    .orderBy('sequence').limit(1).execute()
  return next.length > 0
}

/** The highest number given so far, if above `after` (found on the sequence index, no event read). */
export async function lastNumberedAfter (executor: Executor, after: bigint): Promise<bigint | undefined> {
  const last = await executor.selectFrom('event_feed').select((eb) => eb.fn.max('sequence').as('through')).where('sequence', '>', after).executeTakeFirst()
  return last?.through === null || last?.through === undefined ? undefined : BigInt(last.through)
}

export async function setFanOutMark (trx: Executor, through: bigint): Promise<void> {
  await trx.updateTable('event_log').set({ fanned_out_through: through }).where('id', '=', 1).execute()
}

/** The event log row, locked for the rest of the transaction (one fan-out or pruning at a time). */
export async function lockEventLog (trx: Executor): Promise<EventLog> {
  if (!isSqlite(trx)) await sql`select 1 from event_log where id = 1 for update`.execute(trx)
  return await readEventLog(trx)
}
