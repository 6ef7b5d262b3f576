import type { Kysely, Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

// API keys (docs/api-keys.md): a user's credentials for programs, each limited to its scopes.
// Only a key's SHA-256 is kept, as with log-in tokens; `prefix` (the start of the key) is what a
// person recognises it by. A revoked key is deleted, so it reads as unknown everywhere, and the
// stream tickets it made go with it.
export function apiKeys (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      const ts = timestampType(dialect)
      await withId(db.schema.createTable('api_keys'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        // The scopes, space-separated, in the order of the list of scopes.
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts)
        .addColumn('last_used_at', ts)
        .execute()
      await db.schema.createIndex('api_keys_user_id_id_idx').on('api_keys').columns(['user_id', 'id']).execute()
      // A ticket made with a key names it (session_token_hash is NULL then).
      await db.schema.alterTable('stream_tickets').addColumn('api_key_id', 'bigint', (c) => c.references('api_keys.id').onDelete('cascade')).execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.alterTable('stream_tickets').dropColumn('api_key_id').execute()
      await db.schema.dropTable('api_keys').execute()
    }
  }
}
