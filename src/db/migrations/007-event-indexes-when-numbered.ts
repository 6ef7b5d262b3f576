import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// On PostgreSQL an event is inserted unnumbered and numbered moments later by the sequencer.
// Every index that holds `sequence` then took an entry at the insert that only said "not
// numbered yet", and another one at the numbering (an update of an indexed column writes a new
// entry in every index of the table). As partial indexes (`where sequence is not null`) they
// take theirs at the numbering only: the insert, on the write's own path, adds two index
// entries (the id, the unnumbered-events index) instead of five. Every query that uses them
// asks for `sequence > …` or `sequence <= …`, which implies `sequence is not null`.
// SQLite numbers an event at the insert: its indexes stay as they are.
export function eventIndexesWhenNumbered (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      if (dialect !== 'postgres') return
      await sql`alter table events drop constraint events_sequence_key`.execute(db)
      await sql`create unique index events_sequence_idx on events (sequence) where sequence is not null`.execute(db)
      await sql`drop index events_audience_sequence_idx`.execute(db)
      await sql`create index events_audience_sequence_idx on events (audience, sequence) where sequence is not null`.execute(db)
      await sql`drop index events_occurred_at_idx`.execute(db)
      await sql`create index events_occurred_at_idx on events (occurred_at) where sequence is not null`.execute(db)
    },
    async down (db: Kysely<any>) {
      if (dialect !== 'postgres') return
      await sql`drop index events_occurred_at_idx`.execute(db)
      await sql`create index events_occurred_at_idx on events (occurred_at)`.execute(db)
      await sql`drop index events_audience_sequence_idx`.execute(db)
      await sql`create index events_audience_sequence_idx on events (audience, sequence)`.execute(db)
      await sql`drop index events_sequence_idx`.execute(db)
      await sql`alter table events add constraint events_sequence_key unique (sequence)`.execute(db)
    }
  }
}
