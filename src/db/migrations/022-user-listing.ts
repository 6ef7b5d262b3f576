import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { dropFtsContentIndex, ftsContentIndex } from './columns.js'

// GET /v1/users (an administrator's list of accounts) sorts by creation time, newest or oldest
// first, and finds an account by any part of its address or name (`q`, 3 characters or more).
//
// - The sort: an index on (created_at, id), so a page at any depth is a range of it.
// - The search is by trigrams, so a part of a word is found without reading every row:
//   - SQLite: an FTS5 index over email and name with the table as its content and the trigram
//     tokenizer (case-insensitive, Unicode), kept in step by triggers on insert, delete and a
//     change of either column; a quoted phrase of 3 characters or more matches wherever it occurs.
//   - PostgreSQL: pg_trgm's GIN operator class on each column; ILIKE '%…%' is answered from the
//     two indexes (a bitmap OR) and checked against the rows. pg_trgm ships with PostgreSQL and
//     is a trusted extension (13 and later): the database's owner may create it, and an
//     operator may create it beforehand for a role that does not own the database.
export function userListing (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await sql`create index users_created_at_id_idx on users (created_at, id)`.execute(db)
      if (dialect === 'postgres') {
        await sql`create extension if not exists pg_trgm`.execute(db)
        await sql`create index users_email_trgm_idx on users using gin (email gin_trgm_ops)`.execute(db)
        await sql`create index users_name_trgm_idx on users using gin (name gin_trgm_ops)`.execute(db)
        return
      }
      await ftsContentIndex(db, 'users', ['email', 'name'], 'trigram')
    },
    async down (db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`drop index users_name_trgm_idx`.execute(db)
        await sql`drop index users_email_trgm_idx`.execute(db)
      } else {
        await dropFtsContentIndex(db, 'users')
      }
      await sql`drop index users_created_at_id_idx`.execute(db)
    }
  }
}
