import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { foreignId, timestampType, withId } from './columns.js'

export function shop (dialect: DialectName): Migration {
  const ts = timestampType(dialect)
  return {
    async up (db: Kysely<any>) {
      await withId(db.schema.createTable('products'), dialect)
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('price', 'bigint', (c) => c.notNull().check(sql`price >= 1`))
        .addColumn('category', 'text', (c) => c.notNull().check(sql`category in ('BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS')`))
        // The last line of defence against overselling: the database refuses negative stock.
        .addColumn('stock', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`stock >= 0`))
        .addColumn('on_sale', 'integer', (c) => c.notNull().defaultTo(1).check(sql`on_sale in (0, 1)`))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute()

      await withId(db.schema.createTable('orders'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('product_id', 'bigint', foreignId('products', 'restrict'))
        .addColumn('quantity', 'bigint', (c) => c.notNull().check(sql`quantity >= 1`))
        .addColumn('total_price', 'bigint', (c) => c.notNull().check(sql`total_price >= 1`))
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('PAID', 'SHIPPED', 'CANCELED')`))
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .execute()
      await db.schema.createIndex('orders_user_id_id_idx').on('orders').columns(['user_id', 'id']).execute()
      await db.schema.createIndex('orders_product_id_idx').on('orders').column('product_id').execute()

      await withId(db.schema.createTable('idempotency_keys'), dialect)
        .addColumn('user_id', 'bigint', foreignId('users', 'cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('IN_PROGRESS', 'DONE')`))
        .addColumn('response_status', 'integer')
        .addColumn('response_body', 'text')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('expires_at', ts, (c) => c.notNull())
        .addUniqueConstraint('idempotency_keys_user_id_key_key', ['user_id', 'key'])
        .execute()
      // Serves the sweep of expired records (orders/idempotency.ts).
      await db.schema.createIndex('idempotency_keys_expires_at_idx').on('idempotency_keys').column('expires_at').execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('idempotency_keys').execute()
      await db.schema.dropTable('orders').execute()
      await db.schema.dropTable('products').execute()
    }
  }
}
