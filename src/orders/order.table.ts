import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export type OrderStatus = 'PAID' | 'SHIPPED' | 'CANCELED'

export interface OrderTable {
  id: GeneratedId
  user_id: Int
  product_id: Int
  quantity: Int
  total_price: Int
  status: OrderStatus
  created_at: Timestamp
  updated_at: Timestamp
}

// Idempotency-Key records for POST /v1/orders, scoped to the user, kept 24 h.
export interface IdempotencyKeyTable {
  id: GeneratedId
  user_id: Int
  key: string
  request_hash: string
  state: 'IN_PROGRESS' | 'DONE'
  response_status: Int | null
  response_body: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

export type OrderRow = Selectable<OrderTable>
