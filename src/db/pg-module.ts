import { createRequire } from 'node:module'
import type pg from 'pg'

// pg (with its type parsers and pool, about 1.4 MiB of heap) is loaded the first time PostgreSQL
// is opened, not by every process of the embedded default. It is CommonJS, so it is required
// synchronously here, where opening a database is synchronous.
const require = createRequire(import.meta.url)
let loaded: typeof pg | undefined

export function pgModule (): typeof pg {
  loaded ??= require('pg') as typeof pg
  return loaded
}
