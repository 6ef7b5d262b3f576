import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kysely } from 'kysely'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { productListing } from '../../src/products/product.listing.js'
import { listProducts } from '../../src/products/product.repository.js'
import { upgradeDatabase } from '../upgrade-database.js'
import { write } from '../../src/db/write.js'

// Products made before the upgrade that added search are found by it afterwards: the upgrade
// indexes the names already there.

const upgrade = upgradeDatabase()

test('names written before the upgrade are searchable after it, and written ones after it too', async () => {
  const { db, dialect } = upgrade.handle
  await migrateTo(db, dialect, '009-product-sort-indexes')
  const at = new Date().toISOString()
  const product = (name: string) => ({ name, price: 100, category: 'BOOK', stock: 1, on_sale: 1, created_at: at, updated_at: at })
  await write(db, async (trx) => await (trx as unknown as Kysely<any>).insertInto('products').values([product('Walnut desk'), product('Desk lamp'), product('Garden chair')]).execute())

  await migrateToLatest(db, dialect)
  await write(db, async (trx) => await trx.insertInto('products').values(product('Standing desk')).execute())
  const found = async (q: string) => (await listProducts(db, dialect, productListing({ q, sort: 'name' }), 100, undefined)).map((p) => p.name)
  assert.deepEqual(await found('desk'), ['Desk lamp', 'Standing desk', 'Walnut desk'])
  assert.deepEqual(await found('chair'), ['Garden chair'])
})
