import type { ColumnType } from 'kysely'

// Both drivers are configured to read every integer as a BigInt (better-sqlite3 `safeIntegers`,
// pg's int8 parser), so 64-bit ids survive exactly; writes accept any integer form.
export type Int = ColumnType<bigint, bigint | number | string, bigint | number | string>
export type GeneratedId = ColumnType<bigint, never, never>
// PostgreSQL stores timestamptz (read as Date); SQLite stores ISO 8601 text. Writes are ISO strings.
export type Timestamp = ColumnType<Date | string, string, string>
// Booleans are stored as 0/1 integers in both databases: better-sqlite3 cannot bind booleans.
export type Flag = ColumnType<bigint | number, number, number>

// The form toISOString() writes: what nowIso() stores. SQLite hands such text back as it is.
export const CANONICAL_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

export function toIso (value: Date | string): string {
  if (typeof value === 'string' && CANONICAL_TIMESTAMP.test(value)) return value
  return (value instanceof Date ? value : new Date(value)).toISOString()
}

export function nowIso (): string {
  return new Date().toISOString()
}

/** JSON text of a value holding BigInts (ids read from the database), each written as its decimal string. */
export function jsonWithBigInts (value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
}
