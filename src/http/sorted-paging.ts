import { hash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { soon } from '../db/compiled.js'
import { DEFAULT_LIMIT, pageOf, type Page } from './paging.js'
import { ApiError } from './errors.js'
import { MAX_ID } from './schemas.js'

// Keyset paging under a sort the client chooses, with filters (docs/api.md, "Filters and sort").
//
// The cursor carries the last row's sort key and its id (the tie-breaker, so the order is total)
// and a fingerprint of the sort and filters it was made under: the next page is the rows after
// (key, id) in that order, one index range scan at any depth, and a cursor reused with another
// sort or other filters is refused (CURSOR_MISMATCH) instead of answering a page of some other
// list. `limit` is not part of the fingerprint: a client may change its page size as it walks.

const PREFIX = 'v2:'
const FINGERPRINT = /^[A-Za-z0-9_-]{16}$/
/** The longest key a cursor carries: a product name is at most 100 UTF-16 units. */
const MAX_KEY_LENGTH = 200

export const SortedPageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'Items per page, 1 to 100 (default 20).' })),
  // `x-sorted-cursor` (validation.ts) checks the cursor's form with the other query fields; that
  // it belongs to this sort and these filters is checked after (CURSOR_MISMATCH).
  cursor: Type.Optional(Type.String({ maxLength: 1200, 'x-sorted-cursor': true, description: 'Opaque cursor from the previous page\'s Link rel="next"; valid only with the same `sort` and filters.' }))
}

export interface SortedCursor {
  readonly fingerprint: string
  /** The last row's sort key, as text (a timestamp, an integer, a name, a rank). */
  readonly key: string
  readonly id: bigint
  /**
   * Whether the row after the last one had the same key: the next page starts inside a run of
   * equal keys. Without it, no row that was there when the page was read has the cursor's key and
   * an id beyond its own, so the next page is only the keys beyond (db/keyset.ts).
   */
  readonly tied?: boolean
}

export function encodeSortedCursor (cursor: SortedCursor): string {
  const parts = [cursor.fingerprint, cursor.key, cursor.id.toString()]
  return Buffer.from(PREFIX + JSON.stringify(cursor.tied === true ? [...parts, 1] : parts)).toString('base64url')
}

/** The cursor after a page's last row, given the row after it (pageOf's `cursorOf`). */
export function sortedCursorOf<K> (fingerprint: string, keyOf: (row: K) => string): <T extends K & { id: bigint }>(row: T, next: T | undefined) => string {
  return (row, next) => {
    const key = keyOf(row)
    return encodeSortedCursor({ fingerprint, key, id: row.id, tied: next !== undefined && keyOf(next) === key })
  }
}

// The last cursor read and its parts: validation reads a request's cursor, then its route reads
// the same string again (a deep page's only cost over the first is reading its cursor).
let last: { cursor: string, parts: SortedCursor | undefined } | undefined

/** The cursor's parts, or undefined when it is not a cursor of this form. */
export function parseSortedCursor (cursor: string): SortedCursor | undefined {
  if (last?.cursor !== cursor) last = { cursor, parts: readSortedCursor(cursor) }
  return last.parts
}

function readSortedCursor (cursor: string): SortedCursor | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (!text.startsWith(PREFIX)) return undefined
  let parts: unknown
  try {
    parts = JSON.parse(text.slice(PREFIX.length))
  } catch {
    return undefined
  }
  if (!Array.isArray(parts) || parts.length < 3 || parts.length > 4) return undefined
  const [fingerprint, key, id, tied] = parts as unknown[]
  if (parts.length === 4 && tied !== 1) return undefined
  if (typeof fingerprint !== 'string' || !FINGERPRINT.test(fingerprint)) return undefined
  if (typeof key !== 'string' || key.length > MAX_KEY_LENGTH) return undefined
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id) || BigInt(id) > MAX_ID) return undefined
  return { fingerprint, key, id: BigInt(id), tied: tied === 1 }
}

/**
 * A short digest of what a list is: its sort and filters, each filter's values in a fixed order
 * (`category=FOOD&category=BOOK` is the same list as `category=BOOK&category=FOOD`), absent
 * members left out.
 */
export function listFingerprint (list: Record<string, string | number | boolean | readonly string[] | undefined>): string {
  // Most requests ask for a few lists (the first page of each sort, a handful of filters): each
  // digest is kept, in a bounded map, so a page costs no hash. It is looked up by the list as
  // given (JSON leaves undefined members out); a list given in another order or with its values
  // in another order is a miss that finds the same digest.
  const given = JSON.stringify(list)
  let fingerprint = fingerprints.get(given)
  if (fingerprint === undefined) {
    const canonical = JSON.stringify(Object.keys(list).sort().flatMap((name) => {
      const value = list[name]
      if (value === undefined) return []
      return [[name, Array.isArray(value) ? [...new Set(value as string[])].sort() : value]]
    }))
    fingerprint = hash('sha256', canonical, 'base64url').slice(0, 16)
    if (fingerprints.size >= FINGERPRINTS_KEPT) fingerprints.delete(fingerprints.keys().next().value!)
    fingerprints.set(given, fingerprint)
  }
  return fingerprint
}

const FINGERPRINTS_KEPT = 1000
const fingerprints = new Map<string, string>()

/** Where a page starts: after `key` and `id` in the list's order, or at the start. */
export interface PagePosition<Key> {
  key: Key
  id: bigint
  /** The next page starts inside a run of rows with this key (SortedCursor.tied). */
  tied?: boolean
}

/**
 * The position a cursor names in the list whose fingerprint is `fingerprint`. `readKey` turns
 * the cursor's key into the sort column's value, or undefined when it is not one (a cursor that
 * was not issued by this service for this sort): that is a bad cursor, a 400 naming `cursor`.
 */
export function pagePosition<Key> (cursor: string | undefined, fingerprint: string, readKey: (key: string) => Key | undefined): PagePosition<Key> | undefined {
  if (cursor === undefined) return undefined
  const parsed = parseSortedCursor(cursor)
  if (parsed === undefined) throw new ApiError('VALIDATION_ERROR', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] })
  if (parsed.fingerprint !== fingerprint) throw new ApiError('CURSOR_MISMATCH')
  const key = readKey(parsed.key)
  if (key === undefined) throw new ApiError('VALIDATION_ERROR', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] })
  return { key, id: parsed.id, tied: parsed.tied }
}

/**
 * The page of a sorted list a valid query asks for: where its cursor starts (a cursor of another
 * list is refused: 400 CURSOR_MISMATCH), `read`'s rows from there (one more than the page, at
 * once or promised), each `present`ed, and the next page's cursor.
 */
export function sortedPage<Row extends { id: bigint }, Key, Item> (query: { limit?: number, cursor?: string }, fingerprint: string,
  order: { readKey: (key: string) => Key | undefined, keyOf: (row: Row) => string },
  read: (rows: number, position: PagePosition<Key> | undefined) => Row[] | Promise<Row[]>, present: (row: Row) => Item): Page<Item> | Promise<Page<Item>> {
  const position = pagePosition(query.cursor, fingerprint, order.readKey)
  const limit = query.limit ?? DEFAULT_LIMIT
  const cursorOf = sortedCursorOf(fingerprint, order.keyOf)
  return soon(read(limit + 1, position), (rows) => pageOf(rows, limit, present, cursorOf))
}
