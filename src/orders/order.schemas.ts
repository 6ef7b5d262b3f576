import { Type, type Static } from '@sinclair/typebox'
import { Id, MAX_ISSUED_ID, named, ReadOnly, Timestamp } from '../http/schemas.js'
import { ORDER_STATUSES, TARGET_STATUSES, type TargetStatus } from './order.state.js'
import type { OrderStatus } from './order.table.js'

// Orders: placing one, its states, who may move it (docs/api.md).

// A product id in a body is a JSON number. JSON parsers (JavaScript's included) read numbers as
// IEEE doubles, so an id above 2^53 - 1 would arrive rounded to a neighbouring id; the body
// therefore accepts ids up to 2^53 - 1 only, which is also the largest id the service issues.
export const ProductId = Type.Integer({
  // int64: the shared body-id rule (validation.ts), so the message is the same as for any body id.
  format: 'int64',
  minimum: 1,
  maximum: MAX_ISSUED_ID,
  description: 'The product to order: a positive integer id as a JSON number, at most 9007199254740991 (2^53 - 1, the largest integer a JSON number carries exactly).',
  examples: [7]
})
export const Quantity = Type.Integer({ minimum: 1, maximum: 1000, description: 'Units to order, 1 to 1000.', examples: [2] })

export const OrderCreateBody = named('OrderCreateRequest', Type.Object({
  productId: ProductId,
  quantity: Quantity,
  id: ReadOnly('The order id.'),
  userId: ReadOnly('The ordering user: always the caller.'),
  totalPrice: ReadOnly('Computed: price × quantity.'),
  status: ReadOnly('Always PAID on creation.'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}, { additionalProperties: false, description: 'The product and how many units.', examples: [{ productId: 3, quantity: 2 }] }))

export const TargetStatusSchema = Type.Unsafe<TargetStatus>({
  type: 'string',
  enum: [...TARGET_STATUSES],
  description: 'CANCELED (owner or admin, while the order is PAID; the stock is restored) or SHIPPED (admin, from PAID).'
})

// Every other member of the representation is read-only after creation: a client may send back
// what it read with a new status; those members are accepted and ignored.
export const OrderPatchBody = named('OrderPatchRequest', Type.Object({
  status: TargetStatusSchema,
  id: ReadOnly('The order id.'),
  userId: ReadOnly('The ordering user.'),
  productId: ReadOnly('The ordered product; fixed once the order exists.'),
  quantity: ReadOnly('The ordered units; fixed once the order exists.'),
  totalPrice: ReadOnly('price × quantity at the time of ordering.'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}, { additionalProperties: false, description: 'The status to move the order to.', examples: [{ status: 'CANCELED' }] }))

export const OrderProperties = {
  id: Id,
  userId: Id,
  productId: Id,
  quantity: Type.Integer({ minimum: 1, maximum: 1000 }),
  totalPrice: Type.Unsafe<bigint>({ type: 'integer', format: 'int64', minimum: 1, description: 'price × quantity, in the smallest currency unit.', examples: [3000] }),
  status: Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES] }),
  createdAt: Timestamp,
  updatedAt: Timestamp
}
export const Order = named('Order', Type.Object(OrderProperties, {
  description: 'An order.',
  examples: [{ id: 11, userId: 42, productId: 3, quantity: 2, totalPrice: 3000, status: 'PAID', createdAt: '2026-11-21T16:30:00.000Z', updatedAt: '2026-11-21T16:30:00.000Z' }]
}))
export type OrderType = Static<typeof Order>

export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$',
  description: 'Optional. 1 to 255 printable ASCII characters, chosen by the client (a UUID is a good choice). ' +
    'A retry with the same key and the same body within 24 hours returns the first response again, with ' +
    '`Idempotent-Replayed: true`, and creates nothing; the same key with another body is 422 IDEMPOTENCY_KEY_REUSED; ' +
    'while the first request with the key is still running, a retry waits for it (up to a few seconds) or gets 409 ' +
    'IDEMPOTENCY_KEY_IN_USE. Keys are scoped to the calling user.',
  examples: ['9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d']
})
