import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

export function posts (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('posts'), dialect)
        .addColumn('author_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('views', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`views >= 0`))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute()
      // Lists are newest first by id (keyset paging); the primary key serves the unfiltered
      // list and this index serves ?authorId= and the profile's post count.
      await db.schema.createIndex('posts_author_id_id_idx').on('posts').columns(['author_id', 'id']).execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('posts').execute()
    }
  }
}
