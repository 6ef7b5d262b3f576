import type { Kysely, Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType } from './columns.js'

// Tickets for opening event streams from a browser, whose EventSource cannot send an
// Authorization header (docs/events.md): a ticket names the caller and the credential it was
// made with (the session's token hash), so a stream opened with it lives only as long as that
// credential does. Only a ticket's hash is kept, as with tokens. A ticket is short-lived; each
// new one deletes its user's expired ones.
export function eventStreamTickets (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await db.schema.createTable('stream_tickets')
        .addColumn('ticket_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        // The session the ticket was made with (NULL when another kind of credential made it).
        .addColumn('session_token_hash', 'text')
        .addColumn('created_at', timestampType(dialect), (c) => c.notNull())
        .addColumn('expires_at', timestampType(dialect), (c) => c.notNull())
        .execute()
      await db.schema.createIndex('stream_tickets_user_idx').on('stream_tickets').columns(['user_id', 'expires_at']).execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('stream_tickets').execute()
    }
  }
}
