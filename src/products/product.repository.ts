import { execute, firstRowSoon, precompiled, rowsSoon } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import { precompiledLock } from '../db/lock.js'
import type { DialectName } from '../db/database.js'
import type { Category } from './product.schemas.js'
import type { ProductRow, ProductTable } from './product.table.js'
import { sql, type CompiledQuery, type RawBuilder, type Updateable } from 'kysely'
import { fts5Query, tsQuery, tsQueryOnce } from '../search/search-terms.js'
import { fts5Occurrences, rankValue } from '../search/relevance.js'
import { pageAfter, readPage, readShapedPage, shapedPosition, type PageStart } from '../db/keyset.js'
import type { PagePosition } from '../http/sorted-paging.js'
import { PRODUCT_ORDERS, type ProductListing, type ProductOrderName, type RankedProductRow } from './product.listing.js'

export interface NewProduct {
  name: string
  price: number
  category: Category
  stock: number
  onSale: boolean
  now: string
}

// Named columns, not `*`: a hot query runs as a prepared statement (db/statement-names.ts), and
// PostgreSQL's table also holds the search document (migration 010), which no answer shows.
const PRODUCT_COLUMNS = ['id', 'name', 'price', 'category', 'stock', 'on_sale', 'created_at', 'updated_at', 'images'] as const

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
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirstOrThrow()
}

function selectProduct (db: Executor, id: bigint) {
  return db.selectFrom('products').select(PRODUCT_COLUMNS).where('id', '=', id)
}

// One read, compiled twice: as it is, and as the lock of a read-check-write (FOR UPDATE on
// PostgreSQL).
const productById = precompiled(selectProduct)

export async function findProductById (db: Executor, id: bigint): Promise<ProductRow | undefined> {
  return await findProductSoon(db, id)
}

/** The product at once on SQLite, its promise on PostgreSQL (db/compiled.ts firstRowSoon). */
export function findProductSoon (db: Executor, id: bigint): ProductRow | undefined | Promise<ProductRow | undefined> {
  return firstRowSoon(db, productById(db, id))
}

const productForUpdate = precompiledLock(selectProduct)

/** The product, locked until the transaction ends (PostgreSQL; SQLite holds the write lock already). */
export async function lockProduct (trx: Executor, dialect: DialectName, id: bigint): Promise<ProductRow | undefined> {
  return (await execute(trx, productForUpdate(trx, dialect, id))).rows[0]
}

const LISTED_COLUMNS = PRODUCT_COLUMNS.map((column) => `products.${column}` as const)

/**
 * The queries of `limit` products of a list in its order, after `position` when given (one, or
 * two on SQLite: db/keyset.ts): the filters as conditions, the sort key and the id compared with
 * the cursor's, so each page is a range of the sort's index (migration 009). Names compare by code point on both databases
 * (PostgreSQL's "C" collation, SQLite's BINARY): the order does not depend on the server's locale.
 *
 * A search (`q`) is a condition on the database's text index (migration 010); sorted by
 * relevance, the rank is the row's own (search/relevance.ts).
 */
export function listProductsQueries (db: Executor, dialect: DialectName, listing: ProductListing, limit: number, position: PagePosition<string | bigint> | undefined) {
  const { filters } = listing
  const order = PRODUCT_ORDERS[listing.sort]
  const search = filters.search
  const postgres = dialect === 'postgres'
  let query = db.selectFrom('products').select(LISTED_COLUMNS)
  let rank: RawBuilder<number | bigint> | undefined
  if (search !== undefined && postgres) {
    const document = sql`products.search_document`
    const matches = tsQuery(search)
    query = query.where(sql<boolean>`${document} @@ ${matches}`)
    if (order.key === 'rank') rank = sql`ts_rank(${document}, ${tsQueryOnce(search)})`
  } else if (search !== undefined && order.key === 'rank') {
    // The text index drives the query: highlight() needs it in the FROM clause with its MATCH.
    query = query.innerJoin(sql<{ rowid: bigint }>`products_search`.as('products_search'), (join) => join.onRef('products_search.rowid', '=', 'products.id'))
      .where(sql<boolean>`products_search match ${fts5Query(search)}`)
    rank = fts5Occurrences('products_search', 1)
  } else if (search !== undefined) {
    query = query.where(sql<boolean>`products.id in (select rowid from products_search where products_search match ${fts5Query(search)})`)
  }
  if (filters.category !== undefined) query = query.where('products.category', 'in', filters.category)
  if (filters.onSale !== undefined) query = query.where('products.on_sale', '=', filters.onSale ? 1 : 0)
  if (filters.inStock !== undefined) query = query.where('products.stock', filters.inStock ? '>' : '=', 0n)
  // A price bound on the cursor's side holds already when the cursor is inside it; stated again
  // it is a second range on the price index, which SQLite may range by instead of the cursor.
  const cursorPrice = order.key === 'price' && position !== undefined ? position.key as bigint : undefined
  const impliedMin = cursorPrice !== undefined && order.direction === 'asc' && filters.minPrice !== undefined && cursorPrice >= BigInt(filters.minPrice)
  const impliedMax = cursorPrice !== undefined && order.direction === 'desc' && filters.maxPrice !== undefined && cursorPrice <= BigInt(filters.maxPrice)
  if (filters.minPrice !== undefined && !impliedMin) query = query.where('products.price', '>=', BigInt(filters.minPrice))
  if (filters.maxPrice !== undefined && !impliedMax) query = query.where('products.price', '<=', BigInt(filters.maxPrice))
  if (position !== undefined && !postgres && rank === undefined) {
    return pageAfter(dialect, query, { table: 'products', column: order.key, direction: order.direction }, position, limit)
  }
  const sortKey = rank ?? (order.key === 'name' && postgres ? sql`products.name collate "C"` : sql.ref(`products.${order.key}`))
  if (position !== undefined) {
    const key = order.key === 'rank' ? rankValue(position.key as string, postgres) : sql`${position.key}`
    query = query.where(sql<boolean>`(${sortKey}, products.id) ${sql.raw(order.direction === 'desc' ? '<' : '>')} (${key}, ${position.id})`)
  }
  const ranked = rank === undefined ? query : query.select(rank.as('rank'))
  return [ranked.orderBy(sortKey, order.direction).orderBy('products.id', order.direction).limit(limit)]
}

export async function listProducts (db: Executor, dialect: DialectName, listing: ProductListing, limit: number, position: PagePosition<string | bigint> | undefined): Promise<RankedProductRow[]> {
  return await listProductsSoon(db, dialect, listing, limit, position)
}

/** The page's rows: at once on SQLite for a list with no filter and no search (db/compiled.ts rowsSoon), else their promise. */
export function listProductsSoon (db: Executor, dialect: DialectName, listing: ProductListing, limit: number, position: PagePosition<string | bigint> | undefined): RankedProductRow[] | Promise<RankedProductRow[]> {
  if (!Object.values(listing.filters).every((value) => value === undefined)) {
    return readPage(listProductsQueries(db, dialect, listing, limit, position), limit, async (query) => await query.execute())
  }
  return readShapedPage(dialect, position, limit, (start, part, cursor) => rowsSoon(db, plainPage(dialect, listing.sort, start, part)(db, limit, ...cursor)))
}

// The lists with no filter and no search (each sort, first page or after a cursor) are the ones
// read most: each query of such a shape is compiled once (db/compiled.ts), its arguments the
// page size, then the cursor's key and id, those it has.
type PlainPage = (db: Executor, ...args: unknown[]) => CompiledQuery<RankedProductRow>
const plainPages = new Map<string, PlainPage>()

function plainPage (dialect: DialectName, sort: ProductOrderName, start: PageStart, part: number): PlainPage {
  const shape = `${dialect} ${sort} ${start} ${part}`
  let page = plainPages.get(shape)
  if (page === undefined) {
    page = precompiled((db: Executor, ...args: unknown[]) =>
      listProductsQueries(db, dialect, { sort, filters: {}, fingerprint: '' }, args[0] as number, shapedPosition(dialect, start, part, args.slice(1)))[part]!) as PlainPage
    plainPages.set(shape, page)
  }
  return page
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
  return await db.updateTable('products').set(set).where('id', '=', id).returning(PRODUCT_COLUMNS).executeTakeFirstOrThrow()
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
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** Writes the product's images (their JSON, files/image.representation.ts); the product as it now is. */
export async function setProductImages (db: Executor, id: bigint, images: string, now: string): Promise<ProductRow> {
  return await db.updateTable('products').set({ images, updated_at: now }).where('id', '=', id).returning(PRODUCT_COLUMNS).executeTakeFirstOrThrow()
}
