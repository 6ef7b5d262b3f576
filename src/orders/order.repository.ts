import type { DialectName } from '../db/database.js'
import { forUpdate } from '../db/lock.js'
import type { Executor } from '../db/schema.js'
import type { OrderRow, OrderStatus } from './order.table.js'

export interface NewOrder {
  userId: bigint
  productId: bigint
  quantity: bigint
  totalPrice: bigint
  status: OrderStatus
  now: string
}

export async function insertOrder (db: Executor, order: NewOrder): Promise<OrderRow> {
  return await db.insertInto('orders')
    .values({
      user_id: order.userId,
      product_id: order.productId,
      quantity: order.quantity,
      total_price: order.totalPrice,
      status: order.status,
      created_at: order.now,
      updated_at: order.now
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function findOrderById (db: Executor, id: bigint): Promise<OrderRow | undefined> {
  return await db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The order, locked until the transaction ends (PostgreSQL; SQLite holds the write lock already). */
export async function lockOrder (trx: Executor, dialect: DialectName, id: bigint): Promise<OrderRow | undefined> {
  return await forUpdate(trx.selectFrom('orders').selectAll().where('id', '=', id), dialect).executeTakeFirst()
}

/** A user's orders, newest first; `limit` rows before the id `before` (keyset paging). */
export async function listOrdersOfUser (db: Executor, userId: bigint, limit: number, before: bigint | undefined): Promise<OrderRow[]> {
  let query = db.selectFrom('orders').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').limit(limit)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

/** Moves the order from `from` to `to`; undefined when it was no longer in `from` (nothing changed). */
export async function updateOrderStatus (db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string): Promise<OrderRow | undefined> {
  return await db.updateTable('orders')
    .set({ status: to, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst()
}
