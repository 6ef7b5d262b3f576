import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// SQLite: an event's number is its key. Writers hold the write lock in turn, so the number
// taken at the insert is the commit order, and it can be the row's own key instead of a row of
// `event_feed` beside it: a write with an event then adds one row, not two, and no longer bumps
// AUTOINCREMENT's counter (sqlite_sequence, one more page in every commit). The key is given
// explicitly, one above the highest (or above the last pruned number once every event is
// pruned), so a number is never given twice. `event_feed` becomes a view of the events, read
// by the same queries as PostgreSQL's table. Existing events take their feed numbers as keys
// (nothing refers to an event's key: deliveries name it by its public id).
// PostgreSQL keeps its table: there an event is numbered after it commits (event.repository.ts).
export function sqliteEventNumberIsKey (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      if (dialect === 'postgres') return
      await sql`create table events_next (
        id integer primary key, event_id text not null, type text not null, occurred_at text not null,
        resource_type text not null, resource_id bigint not null, audience bigint, data text)`.execute(db)
      // Every SQLite event was numbered at its insert; should one lack its number, it is numbered
      // after the others, in the order of its key.
      await sql`insert into events_next (id, event_id, type, occurred_at, resource_type, resource_id, audience, data)
        select coalesce(f.sequence, (select coalesce(max(sequence), 0) from event_feed) + row_number() over (partition by f.sequence is null order by e.id)),
          e.event_id, e.type, e.occurred_at, e.resource_type, e.resource_id, e.audience, e.data
        from events e left join event_feed f on f.event_pk = e.id`.execute(db)
      await sql`drop table event_feed`.execute(db)
      await sql`drop table events`.execute(db)
      await sql`alter table events_next rename to events`.execute(db)
      await sql`create view event_feed (sequence, event_pk, audience) as select id, id, audience from events`.execute(db)
    },
    async down (db: Kysely<any>) {
      if (dialect === 'postgres') return
      await sql`drop view event_feed`.execute(db)
      await sql`create table events_prev (
        id integer primary key autoincrement, event_id text not null, type text not null, occurred_at text not null,
        resource_type text not null, resource_id bigint not null, audience bigint, data text)`.execute(db)
      await sql`insert into events_prev select id, event_id, type, occurred_at, resource_type, resource_id, audience, data from events`.execute(db)
      await sql`drop table events`.execute(db)
      await sql`alter table events_prev rename to events`.execute(db)
      // AUTOINCREMENT goes on above every key and every number given, pruned ones included.
      await sql`delete from sqlite_sequence where name = 'events_prev' or name = 'events'`.execute(db)
      await sql`insert into sqlite_sequence (name, seq) select 'events', max(coalesce((select max(id) from events), 0), pruned_through) from event_log where id = 1`.execute(db)
      await sql`create table event_feed (sequence bigint primary key, event_pk bigint not null, audience bigint)`.execute(db)
      await sql`insert into event_feed (sequence, event_pk, audience) select id, id, audience from events`.execute(db)
    }
  }
}
