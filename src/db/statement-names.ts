// The SQL texts that run on PostgreSQL as named prepared statements: the hot queries of a fixed
// shape (db/compiled.ts). Every other query is sent unnamed, so PostgreSQL parses and plans it
// each time. A named statement is parsed and planned once per connection: 1.29× the throughput
// on a GET by id, 1.11× on a product (docs/decisions.md, Performance). The set is bounded by the number of
// precompiled shapes, each compiled once per database handle.
//
// Such a statement must name its columns: a prepared `SELECT *` fails on a live connection
// ("cached plan must not change result type") once a migration adds a column to its table,
// which is what the instances still running the old version see during a rolling deploy.

const names = new Map<string, string>()

/** Marks a query's SQL text to run as a named prepared statement (where that is on). */
export function nameStatement (sql: string): void {
  if (/\bselect\s+\*|\.\*|returning\s+\*/i.test(sql)) throw new Error(`a named statement must name its columns: ${sql}`)
  if (!names.has(sql)) names.set(sql, `hot_${names.size + 1}`)
}

/** The statement name of a marked SQL text, or undefined. */
export function statementName (sql: string): string | undefined {
  return names.get(sql)
}
