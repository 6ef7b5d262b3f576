import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely } from 'kysely'
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

// SQLite's full-text index over some of a table's text columns, with the table as its content
// (the text is not stored twice), kept in step by the database in the writing statement's
// transaction: triggers for insert, delete and a change of one of the columns (a write of any
// other column leaves the index alone), and the rows already there indexed. Named <table>_search,
// its triggers <table>_search_insert, _delete and _update; the table's key is `id`. The names are
// the migrations' own (never input) and go in unquoted, laid out as the migrations first wrote
// them: a database migrated before and one migrated after hold the same schema, to the byte.
export async function ftsContentIndex (db: Kysely<any>, table: string, columns: readonly string[], tokenizer: string): Promise<void> {
  const index = `${table}_search`
  const list = columns.join(', ')
  const values = (row: 'new' | 'old') => columns.map((column) => `${row}.${column}`).join(', ')
  const insert = `insert into ${index} (rowid, ${list}) values (new.id, ${values('new')});`
  const remove = `insert into ${index} (${index}, rowid, ${list}) values ('delete', old.id, ${values('old')});`
  await sql.raw(`create virtual table ${index} using fts5(${list}, content='${table}', content_rowid='id', tokenize='${tokenizer}')`).execute(db)
  await sql.raw(`create trigger ${index}_insert after insert on ${table} begin
        ${insert}
      end`).execute(db)
  await sql.raw(`create trigger ${index}_delete after delete on ${table} begin
        ${remove}
      end`).execute(db)
  await sql.raw(`create trigger ${index}_update after update of ${list} on ${table} begin
        ${remove}
        ${insert}
      end`).execute(db)
  await sql.raw(`insert into ${index} (${index}) values ('rebuild')`).execute(db)
}

/** Undoes ftsContentIndex. */
export async function dropFtsContentIndex (db: Kysely<any>, table: string): Promise<void> {
  const index = `${table}_search`
  await sql.raw(`drop trigger ${index}_update`).execute(db)
  await sql.raw(`drop trigger ${index}_delete`).execute(db)
  await sql.raw(`drop trigger ${index}_insert`).execute(db)
  await sql.raw(`drop table ${index}`).execute(db)
}
