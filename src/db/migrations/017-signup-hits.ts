import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { timestampType, withId } from './columns.js'

// Sign-ups are counted like every other limit, as hits in `limit_hits` (scope 'signup', the
// client address as key); the attempts of the last hour move there, and their table goes.
export function signupHits (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await sql`insert into limit_hits (scope, key, at) select 'signup', client, attempted_at from signup_attempts`.execute(db)
      await db.schema.dropTable('signup_attempts').execute()
    },
    async down (db: Kysely<any>) {
      await withId(db.schema.createTable('signup_attempts'), dialect)
        .addColumn('client', 'text', (c) => c.notNull())
        .addColumn('attempted_at', timestampType(dialect), (c) => c.notNull())
        .execute()
      await db.schema.createIndex('signup_attempts_client_idx').on('signup_attempts').columns(['client', 'attempted_at']).execute()
      await db.schema.createIndex('signup_attempts_attempted_at_idx').on('signup_attempts').column('attempted_at').execute()
      await sql`insert into signup_attempts (client, attempted_at) select key, at from limit_hits where scope = 'signup'`.execute(db)
      await sql`delete from limit_hits where scope = 'signup'`.execute(db)
    }
  }
}
