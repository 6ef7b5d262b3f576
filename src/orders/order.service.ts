import type { DialectName } from '../db/database.js'
import type { Actor } from '../events/actor.js'
import type { Executor } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { ApiError } from '../http/errors.js'
import { lockProduct, returnStock, takeStock } from '../products/product.repository.js'
import { recordEvent } from '../events/event.repository.js'
import { toProduct } from '../products/product.representation.js'
import { writeWithEvents } from '../events/recorded-write.js'
import { insertOrder, updateOrderStatus, type NewOrder } from './order.repository.js'
import { toOrder } from './order.representation.js'
import { checkTransition, INITIAL_STATUS, type TargetStatus } from './order.state.js'
import type { OrderRow } from './order.table.js'

// The two operations that change stock, each run inside the caller's transaction.

/**
 * Places an order: the product must exist (404), be on sale (409) and have the units (409);
 * the units leave stock and the order is created PAID at price × quantity. Every refusal is
 * decided before anything is written.
 */
/** `base`: PUBLIC_URL, for the product's representation in its event. */
export async function placeOrder (trx: Executor, dialect: DialectName, base: string, actor: Actor, userId: bigint, productId: bigint, quantity: number): Promise<OrderRow> {
  const product = await lockProduct(trx, dialect, productId)
  if (product === undefined) throw new ApiError('PRODUCT_NOT_FOUND')
  if (Number(product.on_sale) !== 1) throw new ApiError('PRODUCT_NOT_ON_SALE')
  const units = BigInt(quantity)
  const now = nowIso()
  // The conditional update is the guarantee (the row lock on PostgreSQL and SQLite's write lock
  // make the read above current, but the statement itself refuses to oversell).
  if (product.stock < units || !await takeStock(trx, productId, units, now)) throw new ApiError('NOT_ENOUGH_STOCK')
  const order: NewOrder = { userId, productId, quantity: units, totalPrice: product.price * units, status: INITIAL_STATUS, now }
  const placed = (id: bigint): OrderRow => ({ id, user_id: userId, product_id: productId, quantity: units, total_price: order.totalPrice, status: order.status, created_at: now, updated_at: now })
  // The product's stock is part of its representation, so a mirror of the catalogue learns it.
  const restocked = { type: 'product.updated', resourceId: productId, data: toProduct({ ...product, stock: product.stock - units, updated_at: now }, base), actor } as const
  return await writeWithEvents(trx, insertOrder(trx, order), { type: 'order.created', audience: userId, data: (id) => toOrder(placed(id)), actor }, [restocked], now)
}

/**
 * Moves a locked order to `target` if the state machine allows it (else 409), with the move's
 * effects: a cancellation returns the units to stock in the same transaction.
 */
export async function moveOrder (trx: Executor, base: string, actor: Actor, order: OrderRow, target: TargetStatus): Promise<OrderRow> {
  const { returnsStock, refusal } = checkTransition(order, target)
  const now = nowIso()
  // Conditional on the status read under the lock, so a move can never apply twice.
  const updated = await updateOrderStatus(trx, order.id, order.status, target, now)
  if (updated === undefined) throw new ApiError(refusal)
  await recordEvent(trx, { type: target === 'CANCELED' ? 'order.canceled' : 'order.shipped', resourceId: order.id, audience: order.user_id, data: toOrder(updated), actor }, now)
  if (returnsStock) {
    const product = await returnStock(trx, order.product_id, order.quantity, now)
    await recordEvent(trx, { type: 'product.updated', resourceId: product.id, data: toProduct(product, base), actor }, now)
  }
  return updated
}
