import { toIso } from '../db/types.js'
import type { OrderType } from './order.schemas.js'
import type { OrderRow } from './order.table.js'

export function toOrder (row: OrderRow): OrderType {
  return {
    id: row.id,
    userId: row.user_id,
    productId: row.product_id,
    quantity: Number(row.quantity),
    totalPrice: row.total_price,
    status: row.status,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at)
  }
}

/** An order representation stored as JSON text (ids and money as decimal strings), revived. */
export function parseStoredOrder (text: string): OrderType {
  const stored = JSON.parse(text) as Record<keyof OrderType, string | number>
  return {
    id: BigInt(stored.id),
    userId: BigInt(stored.userId),
    productId: BigInt(stored.productId),
    quantity: Number(stored.quantity),
    totalPrice: BigInt(stored.totalPrice),
    status: stored.status as OrderType['status'],
    createdAt: String(stored.createdAt),
    updatedAt: String(stored.updatedAt)
  }
}
