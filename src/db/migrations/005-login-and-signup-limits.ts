import type { Kysely, Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

// The log-in limits count per (e-mail, client address), per client address and per e-mail, so a
// failure is one row naming both; a known address (one the account logged in from) is a row per
// user and address; a sign-up attempt is a row per client address. Failures and sign-ups are
// only kept for their window (15 minutes, an hour), so the old failure rows are simply dropped.
export function loginAndSignupLimits (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await db.schema.dropTable('login_failures').execute()
      await withId(db.schema.createTable('login_failures'), dialect)
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('client', 'text', (c) => c.notNull())
        .addColumn('failed_at', ts, (c) => c.notNull())
        .execute()
      // (email, client, failed_at) serves the per-pair and the per-e-mail counts.
      await db.schema.createIndex('login_failures_email_client_idx').on('login_failures').columns(['email', 'client', 'failed_at']).execute()
      await db.schema.createIndex('login_failures_client_idx').on('login_failures').columns(['client', 'failed_at']).execute()
      await db.schema.createIndex('login_failures_failed_at_idx').on('login_failures').column('failed_at').execute()

      await db.schema.createTable('known_login_clients')
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('client', 'text', (c) => c.notNull())
        .addColumn('last_login_at', ts, (c) => c.notNull())
        .addPrimaryKeyConstraint('known_login_clients_pkey', ['user_id', 'client'])
        .execute()

      await withId(db.schema.createTable('signup_attempts'), dialect)
        .addColumn('client', 'text', (c) => c.notNull())
        .addColumn('attempted_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('signup_attempts_client_idx').on('signup_attempts').columns(['client', 'attempted_at']).execute()
      await db.schema.createIndex('signup_attempts_attempted_at_idx').on('signup_attempts').column('attempted_at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('signup_attempts').execute()
      await db.schema.dropTable('known_login_clients').execute()
      await db.schema.dropTable('login_failures').execute()
      await withId(db.schema.createTable('login_failures'), dialect)
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('failed_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('login_failures_scope_key_idx').on('login_failures').columns(['scope', 'key', 'failed_at']).execute()
      await db.schema.createIndex('login_failures_failed_at_idx').on('login_failures').column('failed_at').execute()
    }
  }
}
