import { execute, precompiled } from '../db/compiled.js'
import type { DialectName } from '../db/database.js'
import { precompiledLock } from '../db/lock.js'
import type { Executor } from '../db/schema.js'
import type { RowWrite } from '../events/recorded-write.js'
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

/** A user's orders, newest first; `limit` rows before the id `before` (keyset paging). */
export async function listOrdersOfUser (db: Executor, userId: bigint, limit: number, before: bigint | undefined): Promise<OrderRow[]> {
  let query = db.selectFrom('orders').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').limit(limit)
  if (before !== undefined) query = query.where('id', '<', before)
  return await query.execute()
}

const updateOrderStatusQuery = precompiled((db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string) =>
  db.updateTable('orders').set({ status: to, updated_at: now }).where('id', '=', id).where('status', '=', from).returning(ORDER_COLUMNS))

/** Moves the order from `from` to `to`; undefined when it was no longer in `from` (nothing changed). */
export async function updateOrderStatus (db: Executor, id: bigint, from: OrderStatus, to: OrderStatus, now: string): Promise<OrderRow | undefined> {
  return (await execute(db, updateOrderStatusQuery(db, id, from, to, now))).rows[0]
}
