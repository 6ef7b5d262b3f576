import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// Orders are listed by creation time, then id (GET /v1/orders, GET /v1/users/{id}/orders, both
// directions): one index for everyone's orders, and one per user that replaces (user_id, id),
// which served the list when it was in id order; the new one serves every lookup by user as well
// (the deletion of an account's orders). An order insert writes one index entry more than before.
export function orderListIndexes (_dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await sql`create index orders_created_at_id_idx on orders (created_at, id)`.execute(db)
      await sql`create index orders_user_id_created_at_id_idx on orders (user_id, created_at, id)`.execute(db)
      await sql`drop index orders_user_id_id_idx`.execute(db)
    },
    async down (db: Kysely<any>) {
      await sql`create index orders_user_id_id_idx on orders (user_id, id)`.execute(db)
      await sql`drop index orders_user_id_created_at_id_idx`.execute(db)
      await sql`drop index orders_created_at_id_idx`.execute(db)
    }
  }
}
