// Recognises database failures by their driver codes, the same way for both dialects.

/**
 * The COMMIT of a group commit's batch failed, or SQLite rolled the batch back: nothing of it
 * was made durable (db/group-commit.ts). Answered 503: the same request may well succeed in the
 * next batch.
 */
export class CommitFailed extends Error {
  constructor (cause: unknown) {
    super('The commit failed; nothing of this write was kept', { cause })
  }
}

/**
 * A PostgreSQL query the server did not answer within the client's time limit; the client has
 * dropped the connection (db/database.ts).
 */
export class QueryReadTimeout extends Error {
  constructor () {
    super('Query read timeout')
  }
}

/**
 * A PostgreSQL commit that a synchronous standby never confirmed: the server stopped waiting (the
 * statement time limit, or the session being ended) and committed on the primary alone, which it
 * reports as a WARNING and a success. Not acknowledged to the client: should the primary be lost
 * now, the standby that takes over does not have it (db/database.ts).
 */
export class CommitNotReplicated extends Error {
  constructor () {
    super('The commit was not confirmed by a synchronous standby')
  }
}

function codeOf (error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

export function isUniqueViolation (error: unknown): boolean {
  const code = codeOf(error)
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN'])
// PostgreSQL: admin/crash shutdown, cannot connect now, too many connections, statement timeout,
// and a write refused by a read-only node (25006): during a failover a connection can reach a
// standby or a primary being demoted, which is "no primary now", to retry, not a bug.
const UNAVAILABLE_PG_CODES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25006'])

// True when the failure is the database being out of reach or overloaded, which the client
// should retry (503), as opposed to a bug (500).
export function isDatabaseUnavailable (error: unknown): boolean {
  const code = codeOf(error)
  if (UNAVAILABLE_NODE_CODES.has(code) || UNAVAILABLE_PG_CODES.has(code) || code.startsWith('08')) return true
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_FULL' ||
    code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_BUSY')) return true
  if (error instanceof QueryReadTimeout || error instanceof CommitNotReplicated || error instanceof CommitFailed) return true
  // pg's own messages (a connection that timed out or died); the last one is Kysely's own, once
  // its driver (the SQLite handle or the pool) is closed.
  const message = error instanceof Error ? error.message : ''
  return /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|The database connection is not open|Cannot use a pool after calling end|driver has already been destroyed/i.test(message)
}
