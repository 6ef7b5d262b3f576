import type { TSchema } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Transaction } from 'kysely'
import type { Database, Executor } from '../db/schema.js'
import { write } from '../db/write.js'
import { ApiError, type ErrorCode } from './errors.js'
import { checkIfMatch, etagOf, sendWithTag } from './etag.js'

// Every PUT, PATCH and DELETE of a single resource is the same sequence: in one transaction,
// the addressed row read and locked, then the checks in their fixed order (404 when it does not
// exist, 403 when the caller may not change it, 412 when If-Match is stale), then the write
// (whose business rules answer 409), then the new representation with its new tag, or 204.
// (401 and 400 are answered before the handler runs: the authentication hook and validation.)
// It is written here once; a route handler names its own parts of it.

export interface GuardedWrite<Row, Prepared = undefined> {
  /** Reads the addressed row, locked for the rest of the transaction; undefined when it does not exist. */
  lock: (executor: Executor) => Promise<Row | undefined>
  /** The 404 when the row does not exist. */
  notFound: ErrorCode
  /** Throws (403, or 404 for a resource the caller may not even see) unless the caller may change the row. */
  authorize: (row: Row) => void
  /**
   * The representation of a row, as a GET of the resource shows it, and its named schema: the
   * body of a 200 and what its tag is computed from. Without it the operation has no tag
   * (If-Match is not checked).
   */
  representation?: { schema: TSchema, of: (row: Row) => unknown }
  /**
   * Slow work that must not hold the row lock (password hashing), run after the checks on an
   * unlocked read of the row; the checks are then made again under the lock.
   */
  prepare?: (row: Row) => Promise<Prepared>
  /** The write, with the locked row; returns the changed row (200) or nothing (204). */
  write: (trx: Transaction<Database>, row: Row, prepared: Prepared) => Promise<Row | undefined | void>
}

/** Runs a guarded write (see the top of this file) and sends its answer. */
export async function guardedWrite<Row, Prepared = undefined> (request: FastifyRequest, reply: FastifyReply, spec: GuardedWrite<Row, Prepared>): Promise<FastifyReply> {
  const checked = (row: Row | undefined): Row => {
    if (row === undefined) throw new ApiError(spec.notFound)
    spec.authorize(row)
    // The current tag is computed only when there is an If-Match to compare it with.
    const { representation } = spec
    if (representation !== undefined && request.headers['if-match'] !== undefined) checkIfMatch(request, etagOf(reply, representation.schema, representation.of(row)))
    return row
  }
  const { db } = request.server
  const prepared = spec.prepare === undefined ? undefined as Prepared : await spec.prepare(checked(await spec.lock(db)))
  const written = await write(db, async (trx) => await spec.write(trx, checked(await spec.lock(trx)), prepared))
  if (written === undefined || spec.representation === undefined) return await reply.code(204).send(null)
  return await sendWithTag(reply, spec.representation.schema, spec.representation.of(written))
}
