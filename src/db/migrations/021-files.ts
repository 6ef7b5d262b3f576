import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { timestampType, withId } from './columns.js'

// Files (docs/files.md): product images, post images and avatars.
// - `blobs`: one row per stored blob (a content address: the same bytes are stored once, for
//   every file that has them). `removing` marks a blob whose removal from the storage has begun:
//   an upload that meets it stores its bytes again before it refers to it, so that no row ever
//   refers to bytes the storage no longer has.
// - `files`: an image, owned by exactly one product, post or user (its avatar); it goes with its
//   owner (ON DELETE CASCADE), and the blob then has no file and is removed by the sweep.
// - `images` on products and posts, `avatar` on users: the owner's images as their
//   representations show them (JSON), written in the same transaction as the file's row, so a
//   read of a product or a post needs no second query.
export function files (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      const ts = timestampType(dialect)
      await db.schema.createTable('blobs')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('removing', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', ts, (c) => c.notNull())
        .execute()
      await withId(db.schema.createTable('files'), dialect)
        .addColumn('blob_key', 'text', (c) => c.notNull().references('blobs.key').onDelete('restrict'))
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('width', 'integer', (c) => c.notNull())
        .addColumn('height', 'integer', (c) => c.notNull())
        .addColumn('thumb_size', 'bigint', (c) => c.notNull())
        .addColumn('medium_size', 'bigint', (c) => c.notNull())
        .addColumn('product_id', 'bigint', (c) => c.references('products.id').onDelete('cascade'))
        .addColumn('post_id', 'bigint', (c) => c.references('posts.id').onDelete('cascade'))
        .addColumn('avatar_of', 'bigint', (c) => c.references('users.id').onDelete('cascade').unique())
        .addColumn('created_at', ts, (c) => c.notNull())
        .addCheckConstraint('files_one_owner', sql`(case when product_id is null then 0 else 1 end) + (case when post_id is null then 0 else 1 end) + (case when avatar_of is null then 0 else 1 end) = 1`)
        .execute()
      await db.schema.createIndex('files_product_id_idx').on('files').columns(['product_id', 'id']).where(sql.ref('product_id'), 'is not', null).execute()
      await db.schema.createIndex('files_post_id_idx').on('files').columns(['post_id', 'id']).where(sql.ref('post_id'), 'is not', null).execute()
      await db.schema.createIndex('files_blob_key_idx').on('files').column('blob_key').execute()
      // Work one instance does at a time (the sweep of blobs): who holds it, until when.
      await db.schema.createTable('leases')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('until', ts, (c) => c.notNull())
        .execute()
      await db.schema.alterTable('products').addColumn('images', 'text', (c) => c.notNull().defaultTo('[]')).execute()
      await db.schema.alterTable('posts').addColumn('images', 'text', (c) => c.notNull().defaultTo('[]')).execute()
      await db.schema.alterTable('users').addColumn('avatar', 'text').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.alterTable('users').dropColumn('avatar').execute()
      await db.schema.alterTable('posts').dropColumn('images').execute()
      await db.schema.alterTable('products').dropColumn('images').execute()
      await db.schema.dropTable('leases').execute()
      await db.schema.dropTable('files').execute()
      await db.schema.dropTable('blobs').execute()
    }
  }
}
