import { Type, type Static } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { jsonWithBigInts } from '../db/types.js'
import { MAX_ID } from './schemas.js'

// Keyset paging shared by every list (docs/api.md): newest first by id, `limit` 1–100
// (default 20), an opaque `cursor`, and a `Link: <…>; rel="next"` that keeps the other query
// parameters. The cursor is the last id of the page; a page at any depth is one index range scan.

export const DEFAULT_LIMIT = 20

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'Items per page, 1 to 100 (default 20).' })),
  // `x-cursor` (see validation.ts) checks the cursor with the other query fields, so an
  // unreadable cursor is reported together with a bad `limit` or filter.
  cursor: Type.Optional(Type.String({ maxLength: 200, 'x-cursor': true, description: 'Opaque cursor from the previous page\'s Link rel="next".' }))
}
export const PageQuerySchema = Type.Object(PageQuery)
export type PageQueryType = Static<typeof PageQuerySchema>

const PREFIX = 'v1:'

export function encodeCursor (lastId: bigint): string {
  return Buffer.from(PREFIX + lastId.toString()).toString('base64url')
}

/** The id a cursor stands for, or undefined when the cursor is not one this service issued. */
export function parseCursor (cursor: string): bigint | undefined {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  const digits = text.startsWith(PREFIX) ? text.slice(PREFIX.length) : ''
  if (!/^[1-9][0-9]{0,18}$/.test(digits) || BigInt(digits) > MAX_ID) return undefined
  return BigInt(digits)
}

export interface PageRequest {
  limit: number
  before: bigint | undefined
}

/** The page asked for; the cursor has already passed validation (the `x-cursor` keyword). */
export function pageRequest (query: PageQueryType): PageRequest {
  return { limit: query.limit ?? DEFAULT_LIMIT, before: query.cursor === undefined ? undefined : parseCursor(query.cursor) }
}

/**
 * A page stops early, after at least one item, once its items hold this many bytes of JSON:
 * a hundred posts of a hundred thousand emoji each would otherwise be one 40 MB answer, built in
 * memory at once, that any anonymous client can ask for again and again.
 */
export const PAGE_BYTES = 1024 * 1024

function jsonBytes (item: unknown): number {
  return Buffer.byteLength(jsonWithBigInts(item))
}

/**
 * An upper bound of an item's JSON size, without serialising it: a string's UTF-16 code unit
 * becomes at most 6 bytes of JSON (`\u001f`), a number at most 24 characters, and each member
 * adds its quoted name, a colon and a comma. It walks the item's members and reads lengths only.
 */
function jsonBytesAtMost (value: unknown): number {
  if (typeof value === 'string') return 6 * value.length + 2
  if (value === null || typeof value !== 'object') return 24
  let bytes = 2
  // for…in rather than Object.entries: no array of pairs per object on every page (representations are plain objects).
  for (const key in value) bytes += 6 * key.length + 4 + jsonBytesAtMost((value as Record<string, unknown>)[key])
  return bytes
}

/** A page of a list: its items, and the next page's cursor when more follow. */
export interface Page<R> {
  items: R[]
  next?: string
}

/**
 * Given up to limit + 1 rows fetched in the list's order, returns the page: its items (each row
 * turned into its representation by `present`) and, when more rows follow (past `limit`, or past
 * PAGE_BYTES of JSON, whichever comes first), the next page's cursor: `cursorOf` the last item's
 * row and the row after it (by default the last id: lists newest first).
 *
 * The exact JSON size is needed only near the cap. Until an upper bound of the items' size
 * reaches it (every ordinary page: twenty posts of a few hundred characters are tens of
 * kilobytes at most), no item is serialised here; from then on the exact count decides, so the
 * page stops after the very item it would stop after if every item were measured.
 */
export function pageOf<T extends { id: bigint }, R> (rows: T[], limit: number, present: (row: T) => R,
  cursorOf: (row: T, next: T | undefined) => string = (row) => encodeCursor(row.id)): Page<R> {
  const items: R[] = []
  let bound = 0
  let exact: number | undefined
  let more = rows.length > limit
  for (const row of rows.slice(0, limit)) {
    if (items.length > 0 && exact !== undefined && exact >= PAGE_BYTES) {
      more = true
      break
    }
    const item = present(row)
    items.push(item)
    if (exact !== undefined) exact += jsonBytes(item)
    else {
      bound += jsonBytesAtMost(item)
      if (bound >= PAGE_BYTES) exact = items.reduce((sum: number, each) => sum + jsonBytes(each), 0)
    }
  }
  return more ? { items, next: cursorOf(rows[items.length - 1]!, rows[items.length]) } : { items }
}

/** The page's items, the next page's Link header set on the reply when there is one. */
export function answerPage<R> (request: FastifyRequest, reply: FastifyReply, page: Page<R>): R[] {
  if (page.next !== undefined) void reply.header('link', nextPageLink(request.url, page.next))
  return page.items
}

/** pageOf's page of these rows, answered (answerPage). */
export function finishPage<T extends { id: bigint }, R> (request: FastifyRequest, reply: FastifyReply, rows: T[], limit: number, present: (row: T) => R,
  cursorOf?: (row: T, next: T | undefined) => string): R[] {
  return answerPage(request, reply, pageOf(rows, limit, present, cursorOf))
}

/** The Link header of the page after the one `url` asked for. */
export function nextPageLink (url: string, cursor: string): string {
  return `<${nextPageUrl(url, cursor)}>; rel="next"`
}

// A request URL whose path is plain segments and whose query holds nothing the URL parser would
// encode or cut (a space, a quote, `#`, `<`, `>`, a non-ASCII character): for it, the parser's
// path is the text itself and its query the text parsed as a form. Every ordinary list URL is one.
const PLAIN_URL = /^(?:\/[\w-]+)+(?:\?[\w.~%=&+*,;:@!$()/?-]*)?$/
// A query of `name=value` pairs in the characters a form's serialiser writes as they are
// (letters, digits, `*-._`): URLSearchParams reads it and writes it back unchanged, so it can be
// edited as text (the lists' own `?limit=20`), sparing the parse and the serialisation.
const FORM_PLAIN_QUERY = /^[\w.*-]+=[\w.*-]*(?:&[\w.*-]+=[\w.*-]*)*$/
const FORM_PLAIN_VALUE = /^[\w.*-]*$/

/**
 * The path and query of the next page: the request's, its `cursor` set to the next one (added
 * last, or replacing the one given), as `new URL(url).searchParams.set('cursor', …)` writes them.
 * A plain URL skips the URL object, whose query updates re-serialise and re-parse the whole URL
 * (about 6 % of a list's CPU time); a plain query skips URLSearchParams too (2 % more).
 */
export function nextPageUrl (url: string, cursor: string): string {
  if (!PLAIN_URL.test(url)) {
    const parsed = new URL(url, 'http://placeholder')
    parsed.searchParams.set('cursor', cursor)
    return `${parsed.pathname}${parsed.search}`
  }
  const mark = url.indexOf('?')
  const path = mark === -1 ? url : url.slice(0, mark)
  const given = mark === -1 ? '' : url.slice(mark + 1)
  if (FORM_PLAIN_VALUE.test(cursor) && (given === '' || FORM_PLAIN_QUERY.test(given))) {
    // What set() does to such a query, as text: the first `cursor` pair takes the new value and
    // the others go; with none, the pair comes last.
    const pairs: string[] = []
    let set = false
    for (const pair of given === '' ? [] : given.split('&')) {
      if (!pair.startsWith('cursor=')) pairs.push(pair)
      else if (!set) {
        pairs.push(`cursor=${cursor}`)
        set = true
      }
    }
    if (!set) pairs.push(`cursor=${cursor}`)
    return `${path}?${pairs.join('&')}`
  }
  // From the `?` on: the constructor drops one leading `?`, as the URL's own query does.
  const query = new URLSearchParams(mark === -1 ? '' : url.slice(mark))
  query.set('cursor', cursor)
  return `${path}?${query.toString()}`
}
