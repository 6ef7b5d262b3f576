import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import { precompiledLock } from '../db/lock.js'
import type { DialectName } from '../db/database.js'
import type { Category } from './product.schemas.js'
import type { ProductRow, ProductTable } from './product.table.js'
import type { Updateable } from 'kysely'

export interface NewProduct {
  name: string
  price: number
  category: Category
  stock: number
  onSale: boolean
  now: string
}

export async function insertProduct (db: Executor, product: NewProduct): Promise<ProductRow> {
  return await db.insertInto('products')
    .values({
      name: product.name,
      price: product.price,
      category: product.category,
      stock: product.stock,
      on_sale: product.onSale ? 1 : 0,
      created_at: product.now,
      updated_at: product.now
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

// Named columns, not `*`: a hot query runs as a prepared statement (db/statement-names.ts).
const PRODUCT_COLUMNS = ['id', 'name', 'price', 'category', 'stock', 'on_sale', 'created_at', 'updated_at'] as const

function selectProduct (db: Executor, id: bigint) {
  return db.selectFrom('products').select(PRODUCT_COLUMNS).where('id', '=', id)
}

// One read, compiled twice: as it is, and as the lock of a read-check-write (FOR UPDATE on
// PostgreSQL).
const productById = precompiled(selectProduct)

export async function findProductById (db: Executor, id: bigint): Promise<ProductRow | undefined> {
  return (await execute(db, productById(db, id))).rows[0]
}

const productForUpdate = precompiledLock(selectProduct)

/** The product, locked until the transaction ends (PostgreSQL; SQLite holds the write lock already). */
export async function lockProduct (trx: Executor, dialect: DialectName, id: bigint): Promise<ProductRow | undefined> {
  return (await execute(trx, productForUpdate(trx, dialect, id))).rows[0]
}

/** Newest first; `limit` rows before the id `before` (keyset paging). */
export async function listProducts (db: Executor, limit: number, before: bigint | undefined): Promise<ProductRow[]> {
  let query = db.selectFrom('products').selectAll().orderBy('id', 'desc').limit(limit)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

export interface ProductChanges {
  name?: string
  price?: number
  category?: Category
  stock?: number
  onSale?: boolean
}

export async function updateProduct (db: Executor, id: bigint, changes: ProductChanges, now: string): Promise<ProductRow> {
  const set: Updateable<ProductTable> = { updated_at: now }
  if (changes.name !== undefined) set.name = changes.name
  if (changes.price !== undefined) set.price = changes.price
  if (changes.category !== undefined) set.category = changes.category
  if (changes.stock !== undefined) set.stock = changes.stock
  if (changes.onSale !== undefined) set.on_sale = changes.onSale ? 1 : 0
  return await db.updateTable('products').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

const takeStockQuery = precompiled((db: Executor, id: bigint, quantity: bigint, now: string) => db.updateTable('products')
  .set((eb) => ({ stock: eb('stock', '-', quantity), updated_at: now }))
  .where('id', '=', id)
  .where('stock', '>=', quantity))

/**
 * Takes `quantity` units, in one statement whose condition (`stock >= quantity`) is checked by
 * the database on the row it changes, so stock never goes below zero under any concurrency.
 * False when there were not enough units.
 */
export async function takeStock (db: Executor, id: bigint, quantity: bigint, now: string): Promise<boolean> {
  return (await execute(db, takeStockQuery(db, id, quantity, now))).numAffectedRows === 1n
}

/** Returns units to stock (a canceled order); the product as it now is. */
export async function returnStock (db: Executor, id: bigint, quantity: bigint, now: string): Promise<ProductRow> {
  return await db.updateTable('products')
    .set((eb) => ({ stock: eb('stock', '+', quantity), updated_at: now }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}
