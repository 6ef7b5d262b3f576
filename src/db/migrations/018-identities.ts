import type { Kysely, Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

// Sign-in with an identity provider (docs/accounts.md):
// - identities: an account's link to a provider's subject (at most one per provider an
//   account, and a subject belongs to one account);
// - sign-in flows begun and not yet finished: the PKCE verifier, the nonce and the redirect
//   address, found by the SHA-256 of their `state`, so that a flow begun on one instance is
//   finished on any other. Flows live 10 minutes, are finished by one request at a time and
//   are spent by their sign-in.
// An account made by a provider has no password: its `password_hash` is the unusable marker
// (users/password.ts), as no NOT NULL can be dropped from a SQLite column in place.
export function identities (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('user_identities'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('email', 'text')
        .addColumn('linked_at', ts, (c) => c.notNull())
        .addUniqueConstraint('user_identities_subject_key', ['provider', 'subject'])
        .addUniqueConstraint('user_identities_user_provider_key', ['user_id', 'provider'])
        .execute()

      await withId(db.schema.createTable('oidc_flows'), dialect)
        .addColumn('state_hash', 'text', (c) => c.notNull().unique())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('code_verifier', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text', (c) => c.notNull())
        // Set while one request exchanges the flow's code: a second finish at once is refused.
        .addColumn('claimed_until', ts)
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('oidc_flows_expires_idx').on('oidc_flows').column('expires_at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('oidc_flows').execute()
      await db.schema.dropTable('user_identities').execute()
    }
  }
}
