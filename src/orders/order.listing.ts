import { Type, type Static } from '@sinclair/typebox'
import type { FieldError } from '../http/errors.js'
import { IdString } from '../http/schemas.js'
import { listFingerprint, SortedPageQuery } from '../http/sorted-paging.js'
import { compareInstants, millisecondBounds, parseTimestamp } from '../http/timestamps.js'
import { toIso } from '../db/types.js'
import { ORDER_STATUSES } from './order.state.js'
import type { OrderRow, OrderStatus } from './order.table.js'

// What a list of orders can be asked (GET /v1/orders, GET /v1/users/{id}/orders): filters,
// combined with AND and applied within the orders the caller may see, and one of two sorts, each
// a keyset order over an index (migration 011): the creation time, then the id.

export const ORDER_SORTS = ['-createdAt', 'createdAt'] as const
export type OrderSort = typeof ORDER_SORTS[number]

const TIMESTAMP = 'An RFC 3339 timestamp (`2026-11-25T10:00:00Z`, or with an offset: `2026-11-25T11:00:00+01:00`; a fraction of a second of up to 9 digits)'

export const OrderListQuery = Type.Object({
  ...SortedPageQuery,
  status: Type.Optional(Type.Array(Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES] }), {
    minItems: 1,
    maxItems: ORDER_STATUSES.length,
    description: `Only orders in these states; repeat the parameter for several (\`status=PAID&status=SHIPPED\`). Each one of ${ORDER_STATUSES.join(', ')}.`,
    examples: [['PAID']]
  })),
  productId: Type.Optional(IdString('Only orders of this product: its id, a decimal integer.')),
  createdAfter: Type.Optional(Type.String({ format: 'date-time', description: `Only orders created after this instant (excluded). ${TIMESTAMP}; earlier than \`createdBefore\`.`, examples: ['2026-11-01T00:00:00Z'] })),
  createdBefore: Type.Optional(Type.String({ format: 'date-time', description: `Only orders created before this instant (excluded). ${TIMESTAMP}.`, examples: ['2026-12-01T00:00:00Z'] })),
  sort: Type.Optional(Type.Unsafe<OrderSort>({
    type: 'string',
    enum: [...ORDER_SORTS],
    default: '-createdAt',
    description: 'The order: `-createdAt` newest first (the default) or `createdAt` oldest first; ties by id in the same direction.',
    examples: ['createdAt']
  }))
})
export type OrderListQueryType = Static<typeof OrderListQuery>

/** The rule between parameters, checked with the schema's (see validation.ts). */
export function orderQueryRules (query: Record<string, unknown>): FieldError[] {
  const after = typeof query.createdAfter === 'string' ? parseTimestamp(query.createdAfter) : undefined
  const before = typeof query.createdBefore === 'string' ? parseTimestamp(query.createdBefore) : undefined
  if (after !== undefined && before !== undefined && compareInstants(after, before) >= 0) {
    return [{ field: 'createdAfter', message: 'must be earlier than createdBefore' }]
  }
  return []
}

export interface OrderListing {
  status?: OrderStatus[]
  productId?: bigint
  /** Stored times strictly after this one (the bound's millisecond; see timestamps.ts). */
  createdAfter?: string
  /** Stored times strictly before this one. */
  createdBefore?: string
  sort: OrderSort
  fingerprint: string
}

export function orderListing (query: OrderListQueryType): OrderListing {
  const after = query.createdAfter === undefined ? undefined : parseTimestamp(query.createdAfter)
  const before = query.createdBefore === undefined ? undefined : parseTimestamp(query.createdBefore)
  const status = query.status === undefined ? undefined : [...new Set(query.status)]
  const sort = query.sort ?? '-createdAt'
  const listing = {
    status,
    productId: query.productId === undefined ? undefined : BigInt(query.productId),
    createdAfter: after === undefined ? undefined : millisecondBounds(after).floor,
    createdBefore: before === undefined ? undefined : millisecondBounds(before).ceiling,
    sort
  }
  return {
    ...listing,
    fingerprint: listFingerprint({ ...listing, productId: query.productId })
  }
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

export const orderCursorKey = {
  keyOf: (row: OrderRow) => toIso(row.created_at),
  readKey: (key: string) => ISO_TIME.test(key) && parseTimestamp(key) !== undefined ? key : undefined
}
