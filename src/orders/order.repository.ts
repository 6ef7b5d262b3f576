import { execute, precompiled } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import { precompiledLock } from '../db/lock.js'
import type { Executor } from '../db/schema.js'
import type { RowWrite } from '../events/recorded-write.js'
import type { PagePosition } from '../http/sorted-paging.js'
import { boundsAfterCursor, createdAtDirection } from '../http/created-range.js'
import { pageAfter, readPage } from '../db/keyset.js'
import type { OrderListing } from './order.listing.js'
import type { OrderRow, OrderStatus } from './order.table.js'

export interface NewOrder {
  userId: bigint
  productId: bigint
  quantity: bigint
  totalPrice: bigint
  status: OrderStatus
  now: string
}

// The columns, named rather than `*`: the precompiled queries run as prepared statements
// (db/statement-names.ts).
const ORDER_COLUMNS = ['id', 'user_id', 'product_id', 'quantity', 'total_price', 'status', 'created_at', 'updated_at'] as const

const insertOrderQuery = precompiled((db: Executor, userId: bigint, productId: bigint, quantity: bigint, totalPrice: bigint, status: OrderStatus, now: string) =>
  db.insertInto('orders')
    .values({ user_id: userId, product_id: productId, quantity, total_price: totalPrice, status, created_at: now, updated_at: now })
    .returning(ORDER_COLUMNS))

/** The insert of an order (run with its events by writeWithEvents). */
export function insertOrder (db: Executor, order: NewOrder): RowWrite<OrderRow> {
  return { query: insertOrderQuery(db, order.userId, order.productId, order.quantity, order.totalPrice, order.status, order.now), columns: ORDER_COLUMNS }
}

export async function findOrderById (db: Executor, id: bigint): Promise<OrderRow | undefined> {
  return await db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst()
}

const orderForUpdate = precompiledLock((db: Executor, id: bigint) => db.selectFrom('orders').select(ORDER_COLUMNS).where('id', '=', id))

/** The order, locked until the transaction ends (PostgreSQL; SQLite holds the write lock already). */
export async function lockOrder (trx: Executor, dialect: DialectName, id: bigint): Promise<OrderRow | undefined> {
  return (await execute(trx, orderForUpdate(trx, dialect, id))).rows[0]
}

/**
 * The queries of `limit` orders of a list in its order, after `position` when given (one, or two
 * on SQLite: db/keyset.ts): one user's (`owner`), or everyone's (an admin's list); the filters as
 * conditions; the creation time and the id compared with the cursor's, so each page is a range of
 * an index (migration 011).
 */
export function listOrdersQueries (db: Executor, dialect: DialectName, listing: OrderListing, owner: bigint | undefined, limit: number, position: PagePosition<string> | undefined) {
  let query = db.selectFrom('orders').select(ORDER_COLUMNS)
  if (owner !== undefined) query = query.where('user_id', '=', owner)
  if (listing.status !== undefined) query = query.where('status', 'in', listing.status)
  if (listing.productId !== undefined) query = query.where('product_id', '=', listing.productId)
  const direction = createdAtDirection(listing.sort)
  const range = boundsAfterCursor(listing, direction, position?.key)
  if (range.createdAfter !== undefined) query = query.where('created_at', '>', range.createdAfter)
  if (range.createdBefore !== undefined) query = query.where('created_at', '<', range.createdBefore)
  if (position !== undefined) return pageAfter(dialect, query, { table: 'orders', column: 'created_at', direction }, position, limit)
  return [query.orderBy('created_at', direction).orderBy('id', direction).limit(limit)]
}

export async function listOrders (db: Executor, dialect: DialectName, listing: OrderListing, owner: bigint | undefined, limit: number, position: PagePosition<string> | undefined): Promise<OrderRow[]> {
  return await readPage(listOrdersQueries(db, dialect, listing, owner, limit, position), limit, async (query) => await query.execute())
}

const updateOrderStatusQuery = precompiled((db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string) =>
  db.updateTable('orders').set({ status: to, updated_at: now }).where('id', '=', id).where('status', '=', from).returning(ORDER_COLUMNS))

/** Moves the order from `from` to `to`; undefined when it was no longer in `from` (nothing changed). */
export async function updateOrderStatus (db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string): Promise<OrderRow | undefined> {
  return (await execute(db, updateOrderStatusQuery(db, id, from, to, now))).rows[0]
}
