import { ApiError, type ErrorCode } from '../http/errors.js'
import type { OrderStatus } from './order.table.js'

// The order state machine (docs/shop.md), in one place. Handlers ask this module who
// may request a move and whether the order, in its current state, can make it; they never
// compare statuses themselves.
//
//   PAID ──CANCELED (owner or admin; stock returned)──▶ CANCELED
//   PAID ──SHIPPED  (admin)─────────────────────────────▶ SHIPPED
//   SHIPPED and CANCELED are final.

export const ORDER_STATUSES = ['PAID', 'SHIPPED', 'CANCELED'] as const satisfies readonly OrderStatus[]
/** The statuses a client may ask for in PATCH /v1/orders/{id}. */
export const TARGET_STATUSES = ['CANCELED', 'SHIPPED'] as const satisfies readonly OrderStatus[]
export type TargetStatus = typeof TARGET_STATUSES[number]

/** The status of every new order: it is paid when placed. */
export const INITIAL_STATUS: OrderStatus = 'PAID'

export interface Requester {
  isOwner: boolean
  isAdmin: boolean
}

/** The order's own cancellability check: refund is possible only for a paid order, before shipping. */
export function canCancel (order: { status: OrderStatus }): boolean {
  return order.status === 'PAID'
}

/** Only a paid order can be shipped. */
export function canShip (order: { status: OrderStatus }): boolean {
  return order.status === 'PAID'
}

interface Transition {
  /** Who may ask for the move. */
  allowedFor: (requester: Requester) => boolean
  /** Whether the order, as it is now, can make the move. */
  possible: (order: { status: OrderStatus }) => boolean
  /** The 409 when it cannot. */
  refusal: ErrorCode
  /** The ordered units go back to the product's stock (the refund of a cancellation). */
  returnsStock: boolean
}

const TRANSITIONS: Record<TargetStatus, Transition> = {
  CANCELED: { allowedFor: (r) => r.isOwner || r.isAdmin, possible: canCancel, refusal: 'ORDER_CANNOT_CANCEL', returnsStock: true },
  SHIPPED: { allowedFor: (r) => r.isAdmin, possible: canShip, refusal: 'ORDER_CANNOT_SHIP', returnsStock: false }
}

/** Whoever may read an order: its owner or an admin. */
export function canRead (requester: Requester): boolean {
  return requester.isOwner || requester.isAdmin
}

/** 403 ACCESS_DENIED unless the requester may ask for this move (the message never says why). */
export function authorizeTransition (target: TargetStatus, requester: Requester): void {
  if (!TRANSITIONS[target].allowedFor(requester)) throw new ApiError('ACCESS_DENIED')
}

/**
 * 409 (ORDER_CANNOT_CANCEL or ORDER_CANNOT_SHIP) unless the order can move to `target` now.
 * Returns what the move implies besides the new status, and its refusal code.
 */
export function checkTransition (order: { status: OrderStatus }, target: TargetStatus): { returnsStock: boolean, refusal: ErrorCode } {
  const transition = TRANSITIONS[target]
  if (!transition.possible(order)) throw new ApiError(transition.refusal)
  return { returnsStock: transition.returnsStock, refusal: transition.refusal }
}
