import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// An event's place in the feed moves out of the event row into a narrow table of its own,
// `event_feed (sequence, event_pk, audience)`.
//
// On PostgreSQL events are numbered after they commit (event.repository.ts says why). Numbering
// an event in its own row was an UPDATE of a column held by indexes: never a HOT update, so it
// wrote the whole row again (its JSON data included) and an entry in every index of the table,
// and left a dead row for vacuum. That UPDATE was most of what recording events cost a write.
// Numbering is now an INSERT of three integers into `event_feed`. What is still to be numbered is
// listed in `event_pending (event_pk, audience)`, one small row written with the event and
// deleted by the numbering (it replaces the partial index on unnumbered events).
// SQLite numbers an event at its insert (into `event_feed`, in the same transaction); it has no
// pending table.
//
// The feed reads `event_feed` in sequence order and joins each event by its primary key. The
// indexes on the event row (sequence, audience and sequence, occurred_at) go: the events
// table keeps only its primary key, and pruning finds its cut-off in sequence order.
export function eventFeedTable (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await db.schema.createTable('event_feed')
        .addColumn('sequence', 'bigint', (c) => c.primaryKey())
        // The event's id (events.id). No foreign key: the two are written and pruned together,
        // and a foreign key would cost an index look-up per numbered event.
        .addColumn('event_pk', 'bigint', (c) => c.notNull())
        // A copy of events.audience, so a user's feed is filtered before any event row is read.
        .addColumn('audience', 'bigint')
        .execute()
      await sql`insert into event_feed (sequence, event_pk, audience) select sequence, id, audience from events where sequence is not null`.execute(db)

      if (dialect === 'postgres') {
        await db.schema.createTable('event_pending')
          .addColumn('event_pk', 'bigint', (c) => c.primaryKey())
          // Carried along so the numbering never reads the events table.
          .addColumn('audience', 'bigint')
          .execute()
        await sql`insert into event_pending (event_pk, audience) select id, audience from events where sequence is null`.execute(db)
        await sql`alter table events drop column sequence`.execute(db) // and the indexes on it
        await sql`drop index if exists events_occurred_at_idx`.execute(db)
        return
      }
      // SQLite cannot drop a UNIQUE column: the table is built again without it, and keeps its
      // AUTOINCREMENT counter, so an id is still never given twice.
      await sql`create table events_next (
        id integer primary key autoincrement, event_id text not null, type text not null, occurred_at text not null,
        resource_type text not null, resource_id bigint not null, audience bigint, data text)`.execute(db)
      await sql`insert into events_next (id, event_id, type, occurred_at, resource_type, resource_id, audience, data)
        select id, event_id, type, occurred_at, resource_type, resource_id, audience, data from events`.execute(db)
      await sql`delete from sqlite_sequence where name = 'events_next'`.execute(db)
      await sql`insert into sqlite_sequence (name, seq) select 'events_next', seq from sqlite_sequence where name = 'events'`.execute(db)
      await sql`drop table events`.execute(db)
      await sql`alter table events_next rename to events`.execute(db)
    },
    async down (db: Kysely<any>) {
      await sql`alter table events add column sequence bigint`.execute(db)
      await sql`update events set sequence = (select sequence from event_feed where event_pk = events.id)`.execute(db)
      await sql`create unique index events_sequence_idx on events (sequence) where sequence is not null`.execute(db)
      await sql`create index events_audience_sequence_idx on events (audience, sequence) where sequence is not null`.execute(db)
      await sql`create index events_occurred_at_idx on events (occurred_at) where sequence is not null`.execute(db)
      if (dialect === 'postgres') {
        await sql`create index events_unnumbered_idx on events (id) where sequence is null`.execute(db)
        await db.schema.dropTable('event_pending').execute()
      }
      await db.schema.dropTable('event_feed').execute()
    }
  }
}
