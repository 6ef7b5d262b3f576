import { CompiledQuery, sql, type Compilable } from 'kysely'
import type { FastifyInstance } from 'fastify'
import { dialect } from './helper.js'

// The database's plan of each query a list runs (one, or two on SQLite after a cursor:
// src/db/keyset.ts), for the plan tests. On PostgreSQL sequential scans are priced out, so that a
// plan shows whether an index can serve the query on a table of any size (on a test's small table
// the planner would rightly read it whole). Not a test file.

export async function plansOf (app: FastifyInstance, queries: ReadonlyArray<Compilable<unknown>>): Promise<string[][]> {
  const plans: string[][] = []
  for (const query of queries) {
    const compiled = query.compile()
    if (dialect === 'sqlite') {
      const result = await app.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]))
      plans.push(result.rows.map((r) => r.detail))
      continue
    }
    plans.push(await app.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx)
      const result = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]))
      return result.rows.map((r) => r['QUERY PLAN'])
    }))
  }
  return plans
}
