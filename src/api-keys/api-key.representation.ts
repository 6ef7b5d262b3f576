import { toIso } from '../db/types.js'
import type { ApiKeyRow } from './api-key.repository.js'
import type { ApiKeyType } from './api-key.schemas.js'

export function toApiKey (row: ApiKeyRow): ApiKeyType {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(' '),
    prefix: row.prefix,
    createdAt: toIso(row.created_at),
    expiresAt: row.expires_at === null ? null : toIso(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at)
  }
}
