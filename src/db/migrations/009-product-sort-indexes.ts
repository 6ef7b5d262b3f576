import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'

// One index per sort of GET /v1/products: the sort column, then the id (the tie-breaker), so a
// page under any sort is a range of one index whatever its depth, read forwards or backwards.
// Names sort by code point on both databases: PostgreSQL's index is on the "C" collation,
// which the list's ORDER BY names, so the server's locale neither changes the order nor
// keeps the index from serving it.
export function productSortIndexes (dialect: DialectName): Migration {
  const name = dialect === 'postgres' ? sql`name collate "C"` : sql`name`
  return {
    async up (db: Kysely<any>) {
      await sql`create index products_created_at_id_idx on products (created_at, id)`.execute(db)
      await sql`create index products_price_id_idx on products (price, id)`.execute(db)
      await sql`create index products_name_id_idx on products (${name}, id)`.execute(db)
    },
    async down (db: Kysely<any>) {
      await sql`drop index products_name_id_idx`.execute(db)
      await sql`drop index products_price_id_idx`.execute(db)
      await sql`drop index products_created_at_id_idx`.execute(db)
    }
  }
}
