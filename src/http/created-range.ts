import { Type } from '@sinclair/typebox'
import type { FieldError } from './errors.js'
import { compareInstants, millisecondBounds, parseTimestamp } from './timestamps.js'
import { CANONICAL_TIMESTAMP, toIso } from '../db/types.js'

// `createdAfter` and `createdBefore`, the same on every list that has them (orders, posts):
// RFC 3339 instants, both excluded, the first earlier than the second; the creation time as the
// key a cursor carries under a sort by it; and `sort` on a list ordered by creation time alone
// (orders, users).

const TIMESTAMP = 'An RFC 3339 timestamp (`2026-11-25T10:00:00Z`, or with an offset: `2026-11-25T11:00:00+01:00`; a fraction of a second of up to 9 digits)'

/** The two query parameters; `items` names what is listed (`orders`). */
export function createdRangeQuery (items: string) {
  return {
    createdAfter: Type.Optional(Type.String({ format: 'date-time', description: `Only ${items} created after this instant (excluded). ${TIMESTAMP}; earlier than \`createdBefore\`.`, examples: ['2026-11-01T00:00:00Z'] })),
    createdBefore: Type.Optional(Type.String({ format: 'date-time', description: `Only ${items} created before this instant (excluded). ${TIMESTAMP}.`, examples: ['2026-12-01T00:00:00Z'] }))
  }
}

/** The rule between the two, checked with the schema's (see validation.ts). */
export function createdRangeRule (query: Record<string, unknown>): FieldError[] {
  const after = typeof query.createdAfter === 'string' ? parseTimestamp(query.createdAfter) : undefined
  const before = typeof query.createdBefore === 'string' ? parseTimestamp(query.createdBefore) : undefined
  if (after !== undefined && before !== undefined && compareInstants(after, before) >= 0) {
    return [{ field: 'createdAfter', message: 'must be earlier than createdBefore' }]
  }
  return []
}

export interface CreatedRange {
  /** Stored times strictly after this one (the bound's millisecond; see timestamps.ts). */
  createdAfter?: string
  /** Stored times strictly before this one. */
  createdBefore?: string
}

/** The bounds as stored times, for a query that passed validation (both are well-formed). */
export function createdRange (query: { createdAfter?: string, createdBefore?: string }): CreatedRange {
  const after = query.createdAfter === undefined ? undefined : parseTimestamp(query.createdAfter)
  const before = query.createdBefore === undefined ? undefined : parseTimestamp(query.createdBefore)
  return {
    createdAfter: after === undefined ? undefined : millisecondBounds(after).floor,
    createdBefore: before === undefined ? undefined : millisecondBounds(before).ceiling
  }
}

/** A creation time as a cursor's key: its stored form, and read back only in that form. */
export const createdAtKey = {
  keyOf: (row: { created_at: Date | string }) => toIso(row.created_at),
  readKey: (key: string) => CANONICAL_TIMESTAMP.test(key) && parseTimestamp(key) !== undefined ? key : undefined
}

/**
 * The bounds a page after a cursor still has to state, in a list sorted by creation time. Rows
 * after the cursor are at or before its time (newest first) or at or after it (oldest first), so
 * the bound on that side holds already when the cursor is inside the range; left in the query, it
 * is a second range on the same column, and SQLite then ranges the index by the bound instead of
 * the cursor, reading every row between the two (a deep page of a time range took 6× the first).
 */
export function boundsAfterCursor (range: CreatedRange, direction: 'asc' | 'desc', cursorKey: string | undefined): CreatedRange {
  if (cursorKey === undefined) return range
  if (direction === 'desc' && range.createdBefore !== undefined && cursorKey < range.createdBefore) return { ...range, createdBefore: undefined }
  if (direction === 'asc' && range.createdAfter !== undefined && cursorKey > range.createdAfter) return { ...range, createdAfter: undefined }
  return range
}

/** The sorts of a list ordered by creation time alone: newest first (the default) or oldest first. */
export const CREATED_AT_SORTS = ['-createdAt', 'createdAt'] as const
export type CreatedAtSort = typeof CREATED_AT_SORTS[number]

/** The `sort` query parameter of such a list. */
export function createdAtSortQuery () {
  return {
    sort: Type.Optional(Type.Unsafe<CreatedAtSort>({
      type: 'string',
      enum: [...CREATED_AT_SORTS],
      default: '-createdAt',
      description: 'The order: `-createdAt` newest first (the default) or `createdAt` oldest first; ties by id in the same direction.',
      examples: ['createdAt']
    }))
  }
}

/** The sort asked for, or the default. */
export function createdAtSort (sort: CreatedAtSort | undefined): CreatedAtSort {
  return sort ?? '-createdAt'
}

/** The direction of the creation time, and of the id after it, under the sort. */
export function createdAtDirection (sort: CreatedAtSort): 'asc' | 'desc' {
  return sort === 'createdAt' ? 'asc' : 'desc'
}
