import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'
import { limitIds } from './004-ids-within-json-range.js'

// The event outbox and the webhook deliveries made from it (docs/events.md).
//
// An event row is written in the transaction of the change it describes. Its `sequence` (the
// feed's order) is given at commit time: on SQLite at the insert itself, since writers take the
// database's write lock in turn; on PostgreSQL by the sequencer (numberEvents in
// events/event.repository.ts), which numbers committed events one batch at a time, so no
// reader can see number N+1 before N.
// `audience` is who may read the event besides administrators: NULL for everyone, else the
// id of the one user (no foreign key: a deleted user's events stay in the feed for admins).
export function eventsAndWebhooks (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('events'), dialect)
        // 120 random bits, unique in practice; never looked up, so it has no index: a unique index on
        // random keys would write a random page of the index on every change.
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('sequence', 'bigint', (c) => c.unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('occurred_at', ts, (c) => c.notNull())
        .addColumn('resource_type', 'text', (c) => c.notNull())
        .addColumn('resource_id', 'bigint', (c) => c.notNull())
        .addColumn('audience', 'bigint')
        .addColumn('data', 'text')
        .execute()
      // A user's feed: their own events and the public ones, each range in sequence order.
      await db.schema.createIndex('events_audience_sequence_idx').on('events').columns(['audience', 'sequence']).execute()
      await db.schema.createIndex('events_occurred_at_idx').on('events').column('occurred_at').execute()
      if (dialect === 'postgres') {
        // What the sequencer looks for: committed events not numbered yet (usually none).
        await sql`create index events_unnumbered_idx on events (id) where sequence is null`.execute(db)
      }

      // The feed's horizon: events up to this sequence have been pruned, so an `after` below
      // it would silently skip events (410 instead).
      await db.schema.createTable('event_log')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('pruned_through', 'bigint', (c) => c.notNull())
        .addColumn('fanned_out_through', 'bigint', (c) => c.notNull())
        .execute()
      await db.insertInto('event_log').values({ id: 1, pruned_through: 0, fanned_out_through: 0 }).execute()

      await withId(db.schema.createTable('webhook_endpoints'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        // A JSON array of event types, or ["*"] for every type the owner may see.
        .addColumn('event_types', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1).check(sql`enabled in (0, 1)`))
        .addColumn('disabled_reason', 'text')
        .addColumn('secret', 'text', (c) => c.notNull())
        // During a rotation the previous secret signs too, until it expires.
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', ts)
        // Since when every delivery has failed (NULL once one succeeds): past the limit, the endpoint is disabled.
        .addColumn('failing_since', ts)
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('webhook_endpoints_user_id_id_idx').on('webhook_endpoints').columns(['user_id', 'id']).execute()

      await withId(db.schema.createTable('webhook_deliveries'), dialect)
        .addColumn('endpoint_id', 'bigint', foreignId('webhook_endpoints', 'cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        // The body sent, fixed when the delivery is made: a retry sends the very same bytes.
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('PENDING', 'SUCCEEDED', 'FAILED')`))
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', ts, (c) => c.notNull())
        // A claimed attempt: no other instance takes the delivery until the lease ends.
        .addColumn('lease_until', ts)
        .addColumn('last_attempt_at', ts)
        .addColumn('last_response_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('last_duration_ms', 'integer')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('completed_at', ts)
        .execute()
      await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute()
      await db.schema.createIndex('webhook_deliveries_endpoint_id_id_idx').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute()
      await db.schema.createIndex('webhook_deliveries_created_at_idx').on('webhook_deliveries').column('created_at').execute()
      // Their ids are read by clients, so they stay within what JSON carries exactly.
      for (const table of ['webhook_endpoints', 'webhook_deliveries']) await limitIds(db, dialect, table)
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('webhook_deliveries').execute()
      await db.schema.dropTable('webhook_endpoints').execute()
      await db.schema.dropTable('event_log').execute()
      await db.schema.dropTable('events').execute()
    }
  }
}
