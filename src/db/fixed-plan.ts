import { sql, type RawBuilder } from 'kysely'
import type { DialectName } from './database.js'

// better-sqlite3 builds SQLite with STAT4. Once ANALYZE has run (an operator's routine, and the
// benchmark's), SQLite plans a statement with the values of some of its parameters: one compared
// with an indexed column (a range on the primary key too) and a LIMIT. It then marks the
// statement to be planned again whenever such a parameter is bound anew, and better-sqlite3
// binds every parameter on every run, so the statement is parsed and planned again on every
// request. Measured on the benchmark's data: a session lookup took 20 µs instead of 7, a page of
// posts 78–83 µs instead of 60–63 (docs/PERFORMANCE.md).
//
// A parameter under a cast is not looked at by the planner. The hot statements wrap theirs in
// these helpers: their plans do not depend on the values (the same index is the right one for
// every token, id and page size). On PostgreSQL the cast is to the column's own type, which
// changes nothing there.

/** A text parameter the query planner does not look at (see above). */
export function fixedPlanText (value: string): RawBuilder<string> {
  return sql<string>`cast(${value} as text)`
}

/** An integer parameter (an id, a page size) the query planner does not look at (see above). */
export function fixedPlanInteger<T extends bigint | number> (value: T): RawBuilder<T> {
  return sql<T>`cast(${value} as bigint)`
}

/**
 * A timestamp parameter the query planner does not look at: ISO text under a cast on SQLite. On
 * PostgreSQL, which does not plan a statement again by its values, it stays a plain parameter
 * (a cast to text would not compare with a timestamptz column).
 */
export function fixedPlanTimestamp (dialect: DialectName, value: string): RawBuilder<string> | string {
  return dialect === 'sqlite' ? sql<string>`cast(${value} as text)` : value
}
