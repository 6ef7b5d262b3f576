import { sql, type SelectQueryBuilder } from 'kysely'

// Keyset pages after a cursor (key, id), in the order `key, id` (both ascending or both
// descending).
//
// PostgreSQL compares `(key, id)` with the cursor as one row value and seeks the (key, id) index
// to it. SQLite seeks such a comparison on its first column only and reads on through every row
// that ties with the cursor's key: a deep page among 6,000 posts with no views read all of them
// (0.2 ms against 5 µs). On SQLite a page is therefore read with exact seeks of the index, each
// stopping after `limit` rows: the keys beyond the cursor's, preceded, when the cursor says the
// page starts inside a run of equal keys (SortedCursor.tied), by the rest of that run (the
// cursor's key, ids beyond its id); their rows in that order, the first `limit` of them. A row
// that was there when the previous page was read and ties with its last row would have been the
// row after it, so an untied cursor leaves none out. (One UNION of the two queries cost a deep
// page a fifth more than the first page in the service; a second query always, a tenth more
// where each list is compiled per request.)

export interface KeysetSort { table: string, column: string, direction: 'asc' | 'desc' }

/** The page's queries: one on PostgreSQL, one or two on SQLite (see above), from a query with its filters and columns. */
export function pageAfter<DB, TB extends keyof DB, O> (
  dialect: 'sqlite' | 'postgres',
  filtered: SelectQueryBuilder<DB, TB, O>,
  { table, column, direction }: KeysetSort,
  position: { key: unknown, id: bigint, tied?: boolean },
  limit: number
): Array<SelectQueryBuilder<DB, TB, O>> {
  const beyond = sql.raw(direction === 'desc' ? '<' : '>')
  const key = sql.ref(`${table}.${column}`)
  const id = sql.ref(`${table}.id`)
  if (dialect === 'postgres') {
    return [filtered.where(sql<boolean>`(${key}, ${id}) ${beyond} (${position.key}, ${position.id})`).orderBy(key, direction).orderBy(id, direction).limit(limit)]
  }
  const keysBeyond = filtered.where(sql<boolean>`${key} ${beyond} ${position.key}`).orderBy(key, direction).orderBy(id, direction).limit(limit)
  if (position.tied !== true) return [keysBeyond]
  return [filtered.where(sql<boolean>`${key} = ${position.key}`).where(sql<boolean>`${id} ${beyond} ${position.id}`).orderBy(id, direction).limit(limit), keysBeyond]
}

/** Runs a page's queries in order until `limit` rows are in hand; those rows. */
export async function readPage<Q, R> (queries: readonly Q[], limit: number, run: (query: Q) => Promise<R[]>): Promise<R[]> {
  return await readPageSoon(queries, limit, run)
}

/**
 * readPage for queries whose rows may be at hand at once (db/compiled.ts rowsSoon): the page at
 * once when every query answered at once, else its promise.
 */
export function readPageSoon<Q, R> (queries: readonly Q[], limit: number, run: (query: Q) => R[] | Promise<R[]>, from = 0, rows: R[] = []): R[] | Promise<R[]> {
  for (let i = from; i < queries.length; i++) {
    const part = run(queries[i]!)
    if (part instanceof Promise) {
      return part.then((resolved) => {
        rows.push(...resolved)
        return rows.length >= limit ? rows.slice(0, limit) : readPageSoon(queries, limit, run, i + 1, rows)
      })
    }
    rows.push(...part)
    if (rows.length >= limit) break
  }
  return rows.slice(0, limit)
}

/** Where a page of a list compiled once per shape starts: at the start, after an untied cursor, or inside a run of ties. */
export type PageStart = 'no' | 'untied' | 'tied'

/** Whether a page's query compares the cursor's id: all but SQLite's query of the keys beyond it (see above). */
function usesId (dialect: 'sqlite' | 'postgres', tied: boolean, part: number): boolean {
  return dialect === 'postgres' || (tied && part === 0)
}

/**
 * Reads a page of a list whose queries are compiled once per shape (db/compiled.ts): `run` gets
 * the shape (where the page starts, which of its queries) and the cursor's values that query
 * takes (its key, then its id when it compares it), and returns its rows, at once or promised.
 */
export function readShapedPage<R> (dialect: 'sqlite' | 'postgres', position: { key: unknown, id: bigint, tied?: boolean } | undefined, limit: number,
  run: (start: PageStart, part: number, cursor: unknown[]) => R[] | Promise<R[]>): R[] | Promise<R[]> {
  const tied = position?.tied === true
  const start: PageStart = position === undefined ? 'no' : tied ? 'tied' : 'untied'
  const parts = dialect === 'sqlite' && tied ? [0, 1] : [0]
  return readPageSoon(parts, limit, (part) => run(start, part, position === undefined ? [] : usesId(dialect, tied, part) ? [position.key, position.id] : [position.key]))
}

/** The position a shape's cursor values stand for, as its query is built (the id 0 where the query does not compare it). */
export function shapedPosition (dialect: 'sqlite' | 'postgres', start: PageStart, part: number, cursor: unknown[]): { key: string | bigint, id: bigint, tied: boolean } | undefined {
  if (start === 'no') return undefined
  const tied = start === 'tied'
  return { key: cursor[0] as string | bigint, id: usesId(dialect, tied, part) ? cursor[1] as bigint : 0n, tied }
}
