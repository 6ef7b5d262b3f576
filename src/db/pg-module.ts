import type pg from 'pg'
import { lazyRequire } from '../lazy-require.js'

// pg (with its type parsers and pool, about 1.4 MiB of heap) is loaded the first time PostgreSQL
// is opened, not by every process of the embedded default.
export const pgModule = lazyRequire<typeof pg>('pg')
