import { sql, type RawBuilder } from 'kysely'

// Relevance, the order of a search without a sort. It is computed from the row alone, never from
// the whole table: FTS5's bm25 and PostgreSQL's ts_rank_cd normalised by document counts change
// as rows are added, so a cursor holding one would skip or repeat rows. Products rank by the
// number of times the terms occur in the name: on SQLite counted with highlight(), which marks
// each; on PostgreSQL ts_rank, which weighs the same frequencies. (Posts rank by whether the
// title has every term: post.repository.ts.)

/** A rank as a cursor's key carries it: an integer count (SQLite) or a real (PostgreSQL). */
const RANK = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,12})?(e-[1-9][0-9]?)?$/

export const rankKey = {
  keyOf: (row: { rank?: bigint | number }) => String(row.rank),
  readKey: (key: string) => RANK.test(key) ? key : undefined
}

/** SQLite: how many times the search's terms occur in the given columns of the FTS5 table in FROM. */
export function fts5Occurrences (table: string, columns: number): RawBuilder<number> {
  const counts = Array.from({ length: columns }, (_, column) => {
    const marked = sql`highlight(${sql.table(table)}, ${sql.lit(column)}, char(1), char(2))`
    return sql`(length(${marked}) - length(replace(${marked}, char(1), '')))`
  })
  return sql`(${sql.join(counts, sql` + `)})`
}

/** A cursor's rank as the database compares it with the rank of a row. */
export function rankValue (key: string, postgres: boolean): RawBuilder<number> {
  return postgres ? sql`${key}::real` : sql`${Number(key)}`
}
