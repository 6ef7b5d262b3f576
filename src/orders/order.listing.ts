import { Type, type Static } from '@sinclair/typebox'
import { IdString } from '../http/schemas.js'
import { listFingerprint, SortedPageQuery } from '../http/sorted-paging.js'
import { CREATED_AT_SORTS, createdAtKey, createdAtSort, createdAtSortQuery, createdRange, createdRangeQuery, createdRangeRule, type CreatedAtSort, type CreatedRange } from '../http/created-range.js'
import { ORDER_STATUSES } from './order.state.js'
import type { OrderStatus } from './order.table.js'

// What a list of orders can be asked (GET /v1/orders, GET /v1/users/{id}/orders): filters,
// combined with AND and applied within the orders the caller may see, and one of two sorts, each
// a keyset order over an index (migration 011): the creation time, then the id.

export const ORDER_SORTS = CREATED_AT_SORTS

export const OrderListQuery = Type.Object({
  ...SortedPageQuery,
  status: Type.Optional(Type.Array(Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES] }), {
    minItems: 1,
    maxItems: ORDER_STATUSES.length,
    description: `Only orders in these states; repeat the parameter for several (\`status=PAID&status=SHIPPED\`). Each one of ${ORDER_STATUSES.join(', ')}.`,
    examples: [['PAID']]
  })),
  productId: Type.Optional(IdString('Only orders of this product: its id, a decimal integer.')),
  ...createdRangeQuery('orders'),
  ...createdAtSortQuery()
})
export type OrderListQueryType = Static<typeof OrderListQuery>

/** The rule between parameters, checked with the schema's (see validation.ts). */
export const orderQueryRules = createdRangeRule

export interface OrderListing extends CreatedRange {
  status?: OrderStatus[]
  productId?: bigint
  sort: CreatedAtSort
  fingerprint: string
}

export function orderListing (query: OrderListQueryType): OrderListing {
  const status = query.status === undefined ? undefined : [...new Set(query.status)]
  const listing = {
    status,
    productId: query.productId === undefined ? undefined : BigInt(query.productId),
    ...createdRange(query),
    sort: createdAtSort(query.sort)
  }
  return {
    ...listing,
    fingerprint: listFingerprint({ ...listing, productId: query.productId })
  }
}

export const orderCursorKey = createdAtKey
