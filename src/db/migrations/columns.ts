import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder } from 'kysely'
import type { DialectName } from '../database.js'

// The few column types that differ between the dialects, named once.

export function withId<T extends string> (table: CreateTableBuilder<T, never>, dialect: DialectName): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres'
    ? table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
}

export function timestampType (dialect: DialectName) {
  return dialect === 'postgres' ? sql`timestamptz` : sql`text`
}

export function foreignId (target: string, onDelete: 'cascade' | 'restrict') {
  return (c: ColumnDefinitionBuilder) => c.notNull().references(`${target}.id`).onDelete(onDelete)
}
