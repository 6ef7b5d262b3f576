import type { Kysely, Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

// A second factor (docs/accounts.md):
// - an account's TOTP factor: its secret sealed with the service's key (mfa/secret-box.ts),
//   PENDING until a code proves the person's app has it, then ACTIVE; the last time step a code
//   was accepted for, so that no code is accepted twice, on any instance;
// - recovery codes: only their SHA-256, each spent by its use;
// - log-in challenges: a log-in whose password (or provider) was right, waiting for a code; found
//   by the SHA-256 of the challenge, five minutes, voided by five wrong codes.
export function secondFactor (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('totp_factors'), dialect)
        .addColumn('user_id', 'bigint', (c) => foreignId('users', 'cascade')(c).unique())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('last_used_step', 'bigint')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('activated_at', ts)
        .execute()

      await withId(db.schema.createTable('recovery_codes'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addUniqueConstraint('recovery_codes_user_code_key', ['user_id', 'code_hash'])
        .execute()

      await withId(db.schema.createTable('mfa_challenges'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('challenge_hash', 'text', (c) => c.notNull().unique())
        .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('mfa_challenges_expires_idx').on('mfa_challenges').column('expires_at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('mfa_challenges').execute()
      await db.schema.dropTable('recovery_codes').execute()
      await db.schema.dropTable('totp_factors').execute()
    }
  }
}
