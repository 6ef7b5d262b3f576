import type { CompiledQuery, SelectQueryBuilder } from 'kysely'
import { precompiled } from './compiled.js'
import type { DialectName } from './database.js'
import type { Executor } from './schema.js'

// Row locks for read-check-write sequences inside a transaction. PostgreSQL needs FOR UPDATE;
// SQLite has no such clause and needs none: every write transaction is BEGIN IMMEDIATE, which
// already holds the database's single write lock.

/**
 * A read of the addressed row, locked for the rest of the transaction, compiled once per
 * database handle (db/compiled.ts) in each of its two forms.
 */
export function precompiledLock<A extends unknown[], DB, TB extends keyof DB, O> (
  build: (db: Executor, ...args: A) => SelectQueryBuilder<DB, TB, O>
): (trx: Executor, dialect: DialectName, ...args: A) => CompiledQuery<O> {
  const plain = precompiled(build)
  const locked = precompiled((db: Executor, ...args: A) => build(db, ...args).forUpdate())
  return (trx, dialect, ...args) => dialect === 'postgres' ? locked(trx, ...args) : plain(trx, ...args)
}
