import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { timestampType } from './columns.js'

// Recent authentication (docs/accounts.md): a session remembers when its holder last proved
// who they are (the log-in, or a re-authentication since), so that changes which move an
// account away (its address, its second factor, its keys, its deletion) can ask for a proof
// newer than REAUTHENTICATION_SECONDS. Sessions opened before this version count from their
// log-in.
export function recentAuthentication (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await db.schema.alterTable('sessions').addColumn('authenticated_at', timestampType(dialect)).execute()
      await sql`update sessions set authenticated_at = created_at`.execute(db)
    },
    async down (db: Kysely<any>) {
      await db.schema.alterTable('sessions').dropColumn('authenticated_at').execute()
    }
  }
}
