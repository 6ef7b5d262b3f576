import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

// Accounts people can prove and recover (docs/accounts.md):
// - a user's address is verified or not, and may have a new address waiting for its proof;
// - mailed tokens: only their SHA-256 is kept, with the address the token was sent to (a token
//   proves that address, and only while the account still has it) and its purpose;
// - the mail outbox: a mail to make and send, recorded in the same unit of work as the change
//   that causes it and sent by the background sender (src/mail/mail-sender.ts). It holds no
//   token: a token is made when its mail is sent, so none is ever stored in clear;
// - hits counted against a limit over a sliding window (limits/sliding-window.ts): mails asked
//   for per address, failed tokens per client address.
export function accountsAndMail (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await db.schema.alterTable('users').addColumn('email_verified', 'integer', (c) => c.notNull().defaultTo(0)).execute()
      await db.schema.alterTable('users').addColumn('pending_email', 'text').execute()
      // An administrator made from ADMIN_EMAIL counts as verified (the operator chose the address).
      await sql`update users set email_verified = 1 where role = 'ADMIN'`.execute(db)

      await withId(db.schema.createTable('account_tokens'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('purpose', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('account_tokens_user_idx').on('account_tokens').columns(['user_id', 'purpose']).execute()
      await db.schema.createIndex('account_tokens_expires_idx').on('account_tokens').column('expires_at').execute()

      await withId(db.schema.createTable('mail_outbox'), dialect)
        .addColumn('kind', 'text', (c) => c.notNull())
        // The account the mail is about, when known as it is queued (not a foreign key: a
        // notice outlives nothing, and a mail of a deleted account is dropped when it is sent).
        .addColumn('user_id', 'bigint')
        .addColumn('address', 'text', (c) => c.notNull())
        // What the mail says beyond the account's own row (JSON; never a secret).
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', ts, (c) => c.notNull())
        .addColumn('lease_until', ts)
        .addColumn('last_attempt_at', ts)
        .addColumn('last_error', 'text')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('completed_at', ts)
        .execute()
      await db.schema.createIndex('mail_outbox_due_idx').on('mail_outbox').columns(['status', 'next_attempt_at']).execute()
      await db.schema.createIndex('mail_outbox_completed_idx').on('mail_outbox').column('completed_at').execute()

      // A proposed new address is looked up as the verification mail is made.
      await sql`create index users_pending_email_idx on users (lower(pending_email))`.execute(db)

      await withId(db.schema.createTable('limit_hits'), dialect)
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('limit_hits_scope_key_idx').on('limit_hits').columns(['scope', 'key', 'at']).execute()
      await db.schema.createIndex('limit_hits_at_idx').on('limit_hits').column('at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('limit_hits').execute()
      await db.schema.dropIndex('users_pending_email_idx').execute()
      await db.schema.dropTable('mail_outbox').execute()
      await db.schema.dropTable('account_tokens').execute()
      await db.schema.alterTable('users').dropColumn('pending_email').execute()
      await db.schema.alterTable('users').dropColumn('email_verified').execute()
    }
  }
}
