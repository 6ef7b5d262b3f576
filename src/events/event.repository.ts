import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import { sqliteConnectionOf } from '../db/database.js'
import type { Db, Executor } from '../db/schema.js'
import { afterCommit, handleOf, inTransaction } from '../db/transaction.js'
import { nowIso } from '../db/types.js'
import { eventsCommitted } from './committed.js'
import type { EventRow } from './event.table.js'
import { resourceTypeOf, type EventType } from './event.types.js'

// The outbox: an event is a row written by the transaction of its change, so it exists if and
// only if the change committed. Its place in the feed (`sequence`) is given as it commits:
//
// - SQLite: writers hold the database's write lock in turn (BEGIN IMMEDIATE), so the next number
//   taken at the insert is also the commit order.
// - PostgreSQL: concurrent transactions commit in any order, so a number taken at the insert
//   could become visible after a higher one a reader has already passed. The event is inserted
//   unnumbered; numberEvents() later numbers every committed unnumbered event, one batch at a
//   time under an advisory lock, and readers only read numbered events. A reader that has seen
//   N has therefore seen everything up to N, and whatever commits later gets a number above N.
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
}

/** JSON text of a representation, its BigInt ids written as JSON numbers, as the API sends them. */
export function representationJson (value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => typeof v === 'bigint' ? rawJson(v.toString()) : v)
}

const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON

/** `evt_` and 22 characters: a random UUID's 122 bits (from Node's pooled entropy, no system call per id). */
export function newEventId (): string {
  return 'evt_' + Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64url')
}

function isSqlite (executor: Executor): boolean {
  const handle = handleOf(executor)
  return handle !== undefined && sqliteConnectionOf(handle) !== undefined
}

/** An event's column values, in the order of an insert (here and in events/recorded-write.ts). */
export type Values = [eventId: string, type: string, occurredAt: string, resourceType: string, resourceId: bigint, audience: bigint | null, data: string | null]

export function eventValues (event: NewEvent, now: string): Values {
  return [newEventId(), event.type, now, resourceTypeOf(event.type), event.resourceId, event.audience ?? null,
    event.data === undefined ? null : representationJson(event.data)]
}

/** Tells the dispatcher of the executor's database, once the executor's transaction commits, that events were recorded. */
export function announceEvents (executor: Executor): void {
  const handle = handleOf(executor)
  if (handle !== undefined) afterCommit(executor, () => { eventsCommitted(handle) })
}

/** The insert of an event, its number taken at the insert (SQLite) or left for the sequencer (PostgreSQL). */
function insertEvent (numbered: boolean) {
  return precompiled((db: Executor, ...[eventId, type, occurredAt, resourceType, resourceId, audience, data]: Values) =>
    db.insertInto('events').values({
      event_id: eventId,
      ...(numbered ? { sequence: sql<bigint>`(select coalesce(max(sequence), (select pruned_through from event_log where id = 1)) + 1 from events)` } : {}),
      type,
      occurred_at: occurredAt,
      resource_type: resourceType,
      resource_id: resourceId,
      audience,
      data
    }))
}
const insertNumbered = insertEvent(true)
const insertUnnumbered = insertEvent(false)

/** Records an event inside the transaction of its change (an executor that is not a transaction is refused). */
export async function recordEvent (trx: Executor, event: NewEvent, now = nowIso()): Promise<void> {
  if (!trx.isTransaction) throw new Error('an event is recorded inside the transaction of its change')
  const values = eventValues(event, now)
  await execute(trx, isSqlite(trx) ? insertNumbered(trx, ...values) : insertUnnumbered(trx, ...values))
  announceEvents(trx)
}

// Any fixed 64-bit key; it names the sequencer's lock among the advisory locks of the database.
const SEQUENCER_LOCK = 0x65766e74_73657121n

/**
 * PostgreSQL: gives the committed unnumbered events the next numbers, in the order of their ids,
 * in one transaction under an advisory lock (see the top of this file). SQLite: nothing to do.
 */
export async function numberEvents (db: Db): Promise<void> {
  if (isSqlite(db)) return
  const pending = await sql`select 1 from events where sequence is null limit 1`.execute(db)
  if (pending.rows.length === 0) return
  await inTransaction(db, async (trx) => {
    // The lock is taken by its own statement: the UPDATE's snapshot, taken after, then sees the
    // numbers the previous holder committed.
    await sql`select pg_advisory_xact_lock(${SEQUENCER_LOCK})`.execute(trx)
    await sql`update events set sequence = numbered.sequence
      from (select id, (select coalesce(max(sequence), (select pruned_through from event_log where id = 1)) from events) + row_number() over (order by id) as sequence
            from events where sequence is null) as numbered
      where events.id = numbered.id`.execute(trx)
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

const EVENT_COLUMNS = ['id', 'event_id', 'sequence', 'type', 'occurred_at', 'resource_type', 'resource_id', 'audience', 'data'] as const

/** The query of a feed page (also what the benchmark explains). */
export function listEventsQuery (db: Db, query: FeedQuery) {
  let select = db.selectFrom('events').select(EVENT_COLUMNS)
    .where('sequence', '>', query.after)
    .orderBy('sequence')
    .limit(query.limit)
  const { reader, types } = query
  if (reader !== 'all') select = select.where((eb) => eb.or([eb('audience', 'is', null), eb('audience', '=', reader)]))
  if (types !== undefined) select = select.where('type', 'in', types)
  return select
}

/** A page of the feed: numbered events after `after`, oldest first. */
export async function listEvents (db: Db, query: FeedQuery): Promise<EventRow[]> {
  return await listEventsQuery(db, query).execute()
}

/** Numbered events after `after` and up to `through`, any audience, oldest first (the dispatcher's fan-out). */
export async function eventsAfter (executor: Executor, after: bigint, through: bigint, limit: number): Promise<EventRow[]> {
  return await executor.selectFrom('events').select(EVENT_COLUMNS)
    .where('sequence', '>', after).where('sequence', '<=', through).orderBy('sequence').limit(limit).execute()
}

export interface EventLog {
  prunedThrough: bigint
  fannedOutThrough: bigint
}

export async function readEventLog (executor: Executor): Promise<EventLog> {
  const row = await executor.selectFrom('event_log').select(['pruned_through', 'fanned_out_through']).where('id', '=', 1).executeTakeFirstOrThrow()
  return { prunedThrough: BigInt(row.pruned_through), fannedOutThrough: BigInt(row.fanned_out_through) }
}

// Events are numbered within moments of committing; this margin past the retention period
// keeps an event that occurred before the cut-off but was numbered after a younger one from
// taking that younger one with it.
const NUMBERING_MARGIN_MS = 60 * 60 * 1000

/**
 * Deletes events older than the retention period (only those already made into deliveries),
 * and the finished deliveries as old; records how far the feed was pruned.
 */
export async function pruneEvents (db: Db, retentionMs: number, now = Date.now()): Promise<bigint> {
  const cutoff = new Date(now - retentionMs - NUMBERING_MARGIN_MS).toISOString()
  return await inTransaction(db, async (trx) => {
    const log = await lockEventLog(trx)
    const oldest = await trx.selectFrom('events').select((eb) => eb.fn.max('sequence').as('through'))
      .where('occurred_at', '<', cutoff).where('sequence', '<=', log.fannedOutThrough).executeTakeFirst()
    const through = oldest?.through === null || oldest?.through === undefined ? 0n : BigInt(oldest.through)
    if (through > log.prunedThrough) {
      await trx.deleteFrom('events').where('sequence', '<=', through).execute()
      await trx.updateTable('event_log').set({ pruned_through: through }).where('id', '=', 1).execute()
    }
    await trx.deleteFrom('webhook_deliveries').where('created_at', '<', cutoff).where('status', '!=', 'PENDING').execute()
    return through
  })
}

/** Whether a numbered event lies past the fan-out mark (one indexed look, no event read). */
export async function eventsToFanOut (executor: Executor): Promise<boolean> {
  const next = await executor.selectFrom('events').select('sequence')
    .where('sequence', '>', (eb) => eb.selectFrom('event_log').select('fanned_out_through').where('id', '=', 1))
    .limit(1).execute()
  return next.length > 0
}

/** The highest number given so far, if above `after` (found on the sequence index, no event read). */
export async function lastNumberedAfter (executor: Executor, after: bigint): Promise<bigint | undefined> {
  const last = await executor.selectFrom('events').select((eb) => eb.fn.max('sequence').as('through')).where('sequence', '>', after).executeTakeFirst()
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
