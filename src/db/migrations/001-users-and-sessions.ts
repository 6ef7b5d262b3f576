import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

export function usersAndSessions (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('users'), dialect)
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull().defaultTo('USER').check(sql`role in ('USER', 'ADMIN')`))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute()
      // E-mail uniqueness is case-insensitive and enforced by the database itself, so two
      // concurrent sign-ups with one address cannot both succeed.
      await db.schema.createIndex('users_email_lower_key').on('users').unique()
        .expression(sql`lower(email)`).execute()

      await withId(db.schema.createTable('sessions'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('sessions_user_id_idx').on('sessions').column('user_id').execute()

      await withId(db.schema.createTable('login_failures'), dialect)
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('failed_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('login_failures_scope_key_idx').on('login_failures')
        .columns(['scope', 'key', 'failed_at']).execute()
      await db.schema.createIndex('login_failures_failed_at_idx').on('login_failures').column('failed_at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('login_failures').execute()
      await db.schema.dropTable('sessions').execute()
      await db.schema.dropTable('users').execute()
    }
  }
}
