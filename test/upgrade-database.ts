import { after, before } from 'node:test'
import { openDatabase, type DatabaseHandle } from '../src/db/database.js'
import { freshDatabaseUrl } from './helper.js'
import type { ScratchDatabase } from './scratch-database.js'

// An upgrade test's own database (the test's kind, SQLite or PostgreSQL), opened before its tests
// and dropped after them; the test migrates it to the schema it starts from. Not a test file.

/** The handle, set once the file's `before` hook has run. */
export function upgradeDatabase (): { readonly handle: DatabaseHandle } {
  let scratch: ScratchDatabase
  let handle: DatabaseHandle | undefined
  before(async () => {
    scratch = await freshDatabaseUrl()
    handle = openDatabase(scratch.url)
  })
  after(async () => {
    await handle?.db.destroy()
    await scratch.drop()
  })
  return {
    get handle () {
      if (handle === undefined) throw new Error('the upgrade database opens in the before hook')
      return handle
    }
  }
}
