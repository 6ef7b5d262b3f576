import { type Kysely, type Migration } from 'kysely'

// Every event names who made its change (docs/events.md, "Who made the change"): the user, and
// the API key when the request was made with one; both NULL for the service's own changes and
// for the events recorded before this version. Plain ids, not foreign keys: the record of who
// did something outlives the account and the key.
export function eventActor (): Migration {
  return {
    async up (db: Kysely<any>) {
      await db.schema.alterTable('events').addColumn('actor_user_id', 'bigint').execute()
      await db.schema.alterTable('events').addColumn('actor_api_key_id', 'bigint').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.alterTable('events').dropColumn('actor_api_key_id').execute()
      await db.schema.alterTable('events').dropColumn('actor_user_id').execute()
    }
  }
}
