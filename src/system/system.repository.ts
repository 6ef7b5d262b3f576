import { sql } from 'kysely'
import type { DialectName } from '../db/database.js'
import type { Executor } from '../db/schema.js'

/** Mails waiting and mails given up on (each count one range of the (status, next_attempt_at) index). */
export async function mailCounts (db: Executor): Promise<{ queued: number, failed: number }> {
  const rows = await db.selectFrom('mail_outbox').select(['status', (eb) => eb.fn.countAll<string | number | bigint>().as('count')])
    .where('status', 'in', ['PENDING', 'FAILED']).groupBy('status').execute()
  const count = (status: string): number => Number(rows.find((row) => row.status === status)?.count ?? 0)
  return { queued: count('PENDING'), failed: count('FAILED') }
}

/** Endpoints failing now (a first failure not yet followed by a success) or disabled for failing. */
export async function failingEndpoints (db: Executor): Promise<number> {
  const row = await db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<string | number | bigint>().as('count'))
    .where((eb) => eb.or([eb('failing_since', 'is not', null), eb.and([eb('enabled', '=', 0), eb('disabled_reason', 'is not', null)])]))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

/**
 * PostgreSQL's own WAL archiving, the recipe's backups (docs/RELIABILITY.md): whether it is on,
 * and the segment whose archiving failed after the last one archived, if any. pg_stat_archiver
 * and archive_mode are readable by any role.
 */
export async function postgresArchiving (db: Executor, dialect: DialectName): Promise<{ enabled: boolean, lastError: string | null } | undefined> {
  if (dialect !== 'postgres') return undefined
  const { rows: [row] } = await sql<{ mode: string, failed_wal: string | null, failed_at: Date | null }>`
    select current_setting('archive_mode') as mode, last_failed_time as failed_at,
      case when last_failed_time > coalesce(last_archived_time, '-infinity') then last_failed_wal end as failed_wal
    from pg_stat_archiver`.execute(db)
  const failed = row?.failed_wal ?? null
  return { enabled: row !== undefined && row.mode !== 'off', lastError: failed === null ? null : `archiving the WAL segment ${failed} failed at ${new Date(row!.failed_at!).toISOString()}` }
}
