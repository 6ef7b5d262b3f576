import { sql } from 'kysely'
import { execute, precompiled } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import { precompiledLock } from '../db/lock.js'
import type { Executor } from '../db/schema.js'
import type { RowWrite } from '../events/recorded-write.js'
import type { PagePosition } from '../http/sorted-paging.js'
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
 * `limit` orders of a list in its order, after `position` when given: one user's (`owner`), or
 * everyone's (an admin's list); the filters as conditions; the creation time and the id compared
 * as one row value with the cursor's, so each page is a range of an index (migration 011).
 */
export function listOrdersQuery (db: Executor, listing: OrderListing, owner: bigint | undefined, limit: number, position: PagePosition<string> | undefined) {
  let query = db.selectFrom('orders').select(ORDER_COLUMNS)
  if (owner !== undefined) query = query.where('user_id', '=', owner)
  if (listing.status !== undefined) query = query.where('status', 'in', listing.status)
  if (listing.productId !== undefined) query = query.where('product_id', '=', listing.productId)
  if (listing.createdAfter !== undefined) query = query.where('created_at', '>', listing.createdAfter)
  if (listing.createdBefore !== undefined) query = query.where('created_at', '<', listing.createdBefore)
  const direction = listing.sort === 'createdAt' ? 'asc' : 'desc'
  if (position !== undefined) query = query.where(sql<boolean>`(created_at, id) ${sql.raw(direction === 'desc' ? '<' : '>')} (${position.key}, ${position.id})`)
  return query.orderBy('created_at', direction).orderBy('id', direction).limit(limit)
}

export async function listOrders (db: Executor, listing: OrderListing, owner: bigint | undefined, limit: number, position: PagePosition<string> | undefined): Promise<OrderRow[]> {
  return await listOrdersQuery(db, listing, owner, limit, position).execute()
}

const updateOrderStatusQuery = precompiled((db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string) =>
  db.updateTable('orders').set({ status: to, updated_at: now }).where('id', '=', id).where('status', '=', from).returning(ORDER_COLUMNS))

/** Moves the order from `from` to `to`; undefined when it was no longer in `from` (nothing changed). */
export async function updateOrderStatus (db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string): Promise<OrderRow | undefined> {
  return (await execute(db, updateOrderStatusQuery(db, id, from, to, now))).rows[0]
}
