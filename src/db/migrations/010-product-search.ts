import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { dropFtsContentIndex, ftsContentIndex } from './columns.js'

// Full-text search of product names (GET /v1/products?q=), in each database's own engine, kept
// in step with every write by the database itself, in the writing statement's transaction.
//
// SQLite: an FTS5 index over the name, with the table as its content (the text is not stored
// twice), the Porter stemmer over unicode61 (case folded, accents kept, as PostgreSQL's english
// configuration keeps them), and triggers for insert, delete and a change of name: a change of
// stock or price, the orders' hot path, does not touch it. Existing names are indexed here.
//
// PostgreSQL: the english tsvector of the name as a stored generated column, with a GIN index.
// Not an expression index: where the planner walks a sort's index and tests each row against the
// search, it would compute the tsvector again for every row it passes (a rare word under a price
// sort took 60 ms); a stored one is only compared. Its price is that every update of a product
// computes it again, a few microseconds on an order's change of stock; the row stays a HOT update
// when the name (and so the indexed value) is unchanged. Adding the column computes it for the
// existing rows.
export function productSearch (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`alter table products add column search_document tsvector generated always as (to_tsvector('english'::regconfig, name)) stored`.execute(db)
        await sql`create index products_search_document_idx on products using gin (search_document)`.execute(db)
        return
      }
      await ftsContentIndex(db, 'products', ['name'], 'porter unicode61 remove_diacritics 0')
    },
    async down (db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`alter table products drop column search_document`.execute(db)
        return
      }
      await dropFtsContentIndex(db, 'products')
    }
  }
}
