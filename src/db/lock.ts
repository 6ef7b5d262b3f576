import type { SelectQueryBuilder } from 'kysely'
import type { DialectName } from './database.js'

// Row locks for read-check-write sequences inside a transaction. PostgreSQL needs FOR UPDATE;
// SQLite has no such clause and needs none: every write transaction is BEGIN IMMEDIATE, which
// already holds the database's single write lock.
export function forUpdate<DB, TB extends keyof DB, O> (query: SelectQueryBuilder<DB, TB, O>, dialect: DialectName): SelectQueryBuilder<DB, TB, O> {
  return dialect === 'postgres' ? query.forUpdate() : query
}
