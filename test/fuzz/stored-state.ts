import type { FastifyInstance } from 'fastify'

// Everything the service stores about users, sessions, stream tickets, posts, products, orders,
// sign-in flows and identities, read straight
// from the database, so that "nothing changed" is checked on the rows themselves (a refused
// request that wrote and then answered 4xx would show here, whatever the API says). Log-in
// failure records and idempotency records are left out: recording refusals is their purpose.

// Each table with the column its rows are listed by.
const TABLES = [['users', 'id'], ['sessions', 'id'], ['stream_tickets', 'ticket_hash'], ['posts', 'id'], ['products', 'id'], ['orders', 'id'], ['oidc_flows', 'id'], ['user_identities', 'id']] as const

export async function storedState (app: FastifyInstance): Promise<string> {
  const parts: string[] = []
  for (const [table, key] of TABLES) {
    const rows = await app.db.selectFrom(table).selectAll().orderBy(key).execute()
    // One line per row, so that a difference names the row.
    parts.push(`${table}: ${rows.length} rows`)
    for (const row of rows) parts.push(`${table}: ${JSON.stringify(row, (_, v: unknown) => typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v)}`)
  }
  return parts.join('\n')
}

/** The first line that differs, for a failure message. */
export function firstDifference (before: string, after: string): string {
  const a = before.split('\n')
  const b = after.split('\n')
  const i = a.findIndex((line, n) => line !== b[n])
  return i === -1 ? 'no difference' : `before: ${a[i]!.slice(0, 300)}\n  after:  ${(b[i] ?? '(nothing)').slice(0, 300)}`
}
