import { Type, type Static } from '@sinclair/typebox'
import { Id, named, ReadOnly, Text, Timestamp } from '../http/schemas.js'
import { SCOPES } from '../auth/scopes.js'

// API keys (docs/api-keys.md).

/** Live keys an account may hold at once: enough for a key per program and a rotation under way; a bound on what one account stores. */
export const MAX_LIVE_KEYS = 20

export const ScopeSchema = Type.Unsafe<string>({ type: 'string', enum: [...SCOPES], description: `One of ${SCOPES.join(', ')} (products:write only for an administrator).` })
export const KeyName = Text({ maxLength: 100, description: 'What the key is for, at most 100 characters.', examples: ['fulfilment job'] })
export const KeyScopes = Type.Array(ScopeSchema, {
  minItems: 1,
  maxItems: SCOPES.length,
  uniqueItems: true,
  description: 'What the key may do, each scope once. A write scope does not include its read scope.',
  examples: [['orders:read', 'orders:write']]
})

export const ApiKeyCreateBody = named('ApiKeyCreateRequest', Type.Object({
  name: KeyName,
  scopes: KeyScopes,
  expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the key stops working (in the future); without it the key works until revoked.', examples: ['2027-06-01T00:00:00Z'] })),
  id: ReadOnly('The key id.'),
  prefix: ReadOnly('The start of the key.'),
  createdAt: ReadOnly('Creation time.'),
  lastUsedAt: ReadOnly('Time of the last use.')
}, {
  additionalProperties: false,
  description: 'A new API key.',
  examples: [{ name: 'fulfilment job', scopes: ['orders:read', 'orders:write'] }]
}))
export type ApiKeyCreateBodyType = Static<typeof ApiKeyCreateBody>

const keyProperties = {
  id: Id,
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  prefix: Type.String({ description: 'The start of the key (`rk_` and 8 characters), to tell keys apart; the rest is never shown again.' }),
  createdAt: Timestamp,
  expiresAt: Type.Union([Timestamp, Type.Null()], { description: 'When it stops working; null: until revoked.' }),
  lastUsedAt: Type.Union([Timestamp, Type.Null()], { description: 'Its latest use: the first at once, later ones to the minute; null if never used.' })
}
const keyExample = { id: 7, name: 'fulfilment job', scopes: ['orders:read', 'orders:write'], prefix: 'rk_Xb4k9QmT', createdAt: '2026-11-27T09:00:00.000Z', expiresAt: null, lastUsedAt: '2026-11-27T09:14:00.000Z' }

export const ApiKey = named('ApiKey', Type.Object(keyProperties, {
  description: 'An API key, without its secret.',
  examples: [keyExample]
}))
export type ApiKeyType = Static<typeof ApiKey>

export const ApiKeyWithSecret = named('ApiKeyWithSecret', Type.Object({
  ...keyProperties,
  key: Type.String({ description: 'The key: `rk_`, 32 random characters and a 6-character checksum. Shown only in this answer; send it as `Authorization: Bearer <key>`.', examples: ['rk_Xb4k9QmTz2LwP8vRjN5cY1aF7dHs3Ge6K0tUq9Wi'] })
}, {
  description: 'A new API key, with the key itself, shown once.',
  examples: [{ ...keyExample, lastUsedAt: null, key: 'rk_Xb4k9QmTz2LwP8vRjN5cY1aF7dHs3Ge6K0tUq9Wi' }]
}))
