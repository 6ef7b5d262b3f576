import type { CompiledQuery } from 'kysely'
import { execute } from '../db/compiled.js'
import { sqliteHandleOf } from '../db/database.js'
import type { Executor } from '../db/schema.js'
import { nameStatement } from '../db/statement-names.js'
import { nowIso } from '../db/types.js'
import { handleOf, write } from '../db/write.js'
import { announceEvents, eventValues, numberedEventInsert, representationJson, type NewEvent } from './event.repository.js'
import type { EventType } from './event.types.js'
import type { Actor } from './actor.js'

// A write of one row and the events it causes, atomically, at the least cost the database
// allows. On SQLite the statements run in-process one after the other (a round trip costs
// nothing there), in the unit of work given, or as a unit of their own (db/write.ts). On
// PostgreSQL every statement is a round trip, and the hot writes were bound by them: a post
// created in one autocommitted INSERT took four once its event was recorded (BEGIN, INSERT,
// INSERT, COMMIT). There the write and its events go as one statement, a data-modifying WITH,
// atomic as any single statement is (and, outside a unit, without a transaction around it):
//
//   with written as (<the write, RETURNING its columns>),
//        recorded as (insert into events (...) select ..., written.id, ... from written
//                     union all select <another event's values> returning id, audience),
//        pending as (insert into event_pending (event_pk, audience) select id, audience from recorded)
//   select <the columns> from written
//
// The event about the written row takes the row's id from the statement itself (a new row's
// id is not known before), its representation spliced around it: the representation is built
// here with id 0, and the text after `{"id":0` is sent as a parameter. Everything else in it is
// known before the write (the values written, the row read under its lock), so the event
// carries exactly what the route answers.

/** A statement that writes one row and returns these columns of it. */
export interface RowWrite<R> {
  query: CompiledQuery<R>
  columns: readonly string[]
}

/** The event about the row written. */
export interface RowEvent {
  type: EventType
  /** The one user who may read it besides administrators; undefined: every user. */
  audience?: bigint
  /** The resource's representation after the write, given the row's id; its first member must be `id`. */
  data: (id: bigint) => unknown
  /** Who made the change (actor.ts). */
  actor: Actor
}

const EVENT_COLUMNS = 'event_id, type, occurred_at, resource_type, resource_id, audience, data, actor_user_id, actor_api_key_id'
const ID_PREFIX = '{"id":0'

/**
 * Runs `statement` and records `event` (about the row written) and `others`, in the executor's
 * unit of work, or as one atomic unit when the executor is the database handle. Returns the row.
 */
export async function writeWithEvents<R extends { id: bigint }> (executor: Executor, statement: RowWrite<R>, event: RowEvent, others: NewEvent[] = [], now = nowIso()): Promise<R> {
  const handle = handleOf(executor)
  if (handle === undefined) throw new Error('writeWithEvents: the executor is not traced to a database handle')
  if (sqliteHandleOf(handle) !== undefined) {
    return await write(executor, async (trx) => {
      const row = writtenRow((await execute(trx, statement.query)).rows[0])
      const about: NewEvent = { type: event.type, resourceId: row.id, audience: event.audience, data: event.data(row.id), actor: event.actor }
      for (const recorded of [about, ...others]) await execute(trx, numberedEventInsert(trx, recorded, now))
      announceEvents(trx)
      return row
    })
  }

  const template = representationJson(event.data(0n))
  if (!template.startsWith(ID_PREFIX) || !/^[,}]/.test(template.slice(ID_PREFIX.length))) throw new Error(`writeWithEvents: the representation must begin with its id: ${template.slice(0, 40)}`)
  // The written row's event: its values but the resource id (the row's, in the statement) and
  // the data (spliced around that id).
  const [eventId, type, occurredAt, resourceType, , audience, , actorUserId, actorApiKeyId] = eventValues({ type: event.type, resourceId: 0n, audience: event.audience, actor: event.actor }, now)
  const parameters: unknown[] = [...statement.query.parameters, eventId, type, occurredAt, resourceType, audience, template.slice(ID_PREFIX.length), actorUserId, actorApiKeyId]
  for (const other of others) parameters.push(...eventValues(other, now))
  const query: CompiledQuery<R> = { ...statement.query, sql: combinedSql(statement, others.length), parameters }
  const row = writtenRow((await execute(executor, query)).rows[0])
  announceEvents(executor)
  return row
}

/** Every write given here changes its row (an insert, or the update of a row locked and found). */
function writtenRow<R> (row: R | undefined): R {
  if (row === undefined) throw new Error('writeWithEvents: the write changed no row')
  return row
}

// The text of each shape: by the write's SQL (the same string each time, from its precompiled
// entry), then by the number of other events.
const combined = new Map<string, string[]>()

/** The statement's text for a write and a number of other events: one per shape, run as a named prepared statement. */
function combinedSql (write: RowWrite<unknown>, others: number): string {
  let texts = combined.get(write.query.sql)
  if (texts === undefined) combined.set(write.query.sql, texts = [])
  let text = texts[others]
  if (text === undefined) {
    let next = write.query.parameters.length
    const p = (cast: string): string => `$${++next}::${cast}`
    const selects = [`select ${p('text')}, ${p('text')}, ${p('timestamptz')}, ${p('text')}, written.id, ${p('bigint')}, '{"id":' || written.id::text || ${p('text')}, ${p('bigint')}, ${p('bigint')} from written`]
    for (let i = 0; i < others; i++) selects.push(`select ${p('text')}, ${p('text')}, ${p('timestamptz')}, ${p('text')}, ${p('bigint')}, ${p('bigint')}, ${p('text')}, ${p('bigint')}, ${p('bigint')}`)
    const columns = write.columns.map((c) => `"${c}"`).join(', ')
    text = `with written as (${write.query.sql}), ` +
      `recorded as (insert into events (${EVENT_COLUMNS}) ${selects.join(' union all ')} returning id, audience), ` +
      'pending as (insert into event_pending (event_pk, audience) select id, audience from recorded) ' +
      `select ${columns} from written`
    texts[others] = text
    nameStatement(text)
  }
  return text
}
