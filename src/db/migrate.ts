import { Migrator, type Kysely, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely'
import { sqliteHandleOf, type DialectName } from './database.js'
import { usersAndSessions } from './migrations/001-users-and-sessions.js'
import { posts } from './migrations/002-posts.js'
import { shop } from './migrations/003-shop.js'
import { idsWithinJsonRange } from './migrations/004-ids-within-json-range.js'
import { loginAndSignupLimits } from './migrations/005-login-and-signup-limits.js'
import { eventsAndWebhooks } from './migrations/006-events-and-webhooks.js'
import { eventIndexesWhenNumbered } from './migrations/007-event-indexes-when-numbered.js'
import { eventFeedTable } from './migrations/008-event-feed-table.js'
import { productSortIndexes } from './migrations/009-product-sort-indexes.js'
import { productSearch } from './migrations/010-product-search.js'
import { orderListIndexes } from './migrations/011-order-list-indexes.js'
import { postListing } from './migrations/012-post-listing.js'
import { sqliteEventNumberIsKey } from './migrations/013-sqlite-event-number-is-key.js'
import { eventStreamTickets } from './migrations/014-event-stream-tickets.js'
import { apiKeys } from './migrations/015-api-keys.js'
import { accountsAndMail } from './migrations/016-accounts-and-mail.js'
import { signupHits } from './migrations/017-signup-hits.js'
import { identities } from './migrations/018-identities.js'
import { secondFactor } from './migrations/019-second-factor.js'
import { recentAuthentication } from './migrations/020-recent-authentication.js'
import { files } from './migrations/021-files.js'
import { userListing } from './migrations/022-user-listing.js'
import { eventActor } from './migrations/023-event-actor.js'

// Migrations live in code (no folder scanning), so the built server and the tests run the very
// same list. Names sort in the order they must run.
function migrations (dialect: DialectName): Record<string, Migration> {
  return {
    '001-users-and-sessions': usersAndSessions(dialect),
    '002-posts': posts(dialect),
    '003-shop': shop(dialect),
    '004-ids-within-json-range': idsWithinJsonRange(dialect),
    '005-login-and-signup-limits': loginAndSignupLimits(dialect),
    '006-events-and-webhooks': eventsAndWebhooks(dialect),
    '007-event-indexes-when-numbered': eventIndexesWhenNumbered(dialect),
    '008-event-feed-table': eventFeedTable(dialect),
    '009-product-sort-indexes': productSortIndexes(dialect),
    '010-product-search': productSearch(dialect),
    '011-order-list-indexes': orderListIndexes(dialect),
    '012-post-listing': postListing(dialect),
    '013-sqlite-event-number-is-key': sqliteEventNumberIsKey(dialect),
    '014-event-stream-tickets': eventStreamTickets(dialect),
    '015-api-keys': apiKeys(dialect),
    '016-accounts-and-mail': accountsAndMail(dialect),
    '017-signup-hits': signupHits(dialect),
    '018-identities': identities(dialect),
    '019-second-factor': secondFactor(dialect),
    '020-recent-authentication': recentAuthentication(dialect),
    '021-files': files(dialect),
    '022-user-listing': userListing(dialect),
    '023-event-actor': eventActor()
  }
}

/** The names of every migration this version knows (the same on both databases). */
export function migrationNames (): string[] {
  return Object.keys(migrations('sqlite'))
}

function migrator (db: Kysely<any>, dialect: DialectName): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) }
  // SQLite: on the writer connection (the handle's own reads are query_only), before anything
  // else writes: migrations run before the service serves, or in a test before it writes.
  // Names in code-unit order: Kysely's default, localeCompare, would page in ICU's collation
  // data (about 3 MiB resident) for names that are ASCII and numbered.
  return new Migrator({ db: sqliteHandleOf(db)?.writerDb ?? db, provider, nameComparator: (a, b) => a < b ? -1 : a > b ? 1 : 0 })
}

export async function migrateToLatest (db: Kysely<any>, dialect: DialectName): Promise<MigrationResultSet> {
  const result = await migrator(db, dialect).migrateToLatest()
  if (result.error !== undefined) throw result.error
  return result
}

/** Migrates up or down to the named migration (the upgrade tests start from an older schema). */
export async function migrateTo (db: Kysely<any>, dialect: DialectName, name: string): Promise<MigrationResultSet> {
  const result = await migrator(db, dialect).migrateTo(name)
  if (result.error !== undefined) throw result.error
  return result
}
