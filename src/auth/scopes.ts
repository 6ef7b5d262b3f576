// What an API key may do (docs/api-keys.md). A log-in token holds every scope; a key only those
// it was made with. A write scope does not include its read scope. Each route names what it
// needs in its schema's `security` (built by `requires`), and authentication reads it from
// there: the OpenAPI document and the check are one declaration.

export const SCOPES = ['posts:write', 'orders:read', 'orders:write', 'products:write', 'events:read', 'webhooks:read', 'webhooks:write'] as const
export type Scope = typeof SCOPES[number]
/** Scopes only an administrator's key may hold. */
export const ADMIN_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['products:write'])

/** What an operation asks of its caller: a scope (a log-in token, or a key holding it), or a log-in token itself. */
export type Access = Scope | 'session'

export type SecurityRequirement = Array<Record<string, string[]>>

/** The `security` of an operation that needs `access`: what OpenAPI shows and authentication checks. */
export function requires (access: Access): SecurityRequirement {
  return access === 'session' ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { apiKey: [access] }]
}

/** What a route's `security` asks (undefined for a public route or one that declares none). */
export function accessOf (security: unknown): Access | undefined {
  if (!Array.isArray(security) || security.length === 0) return undefined
  for (const requirement of security as SecurityRequirement) {
    const scope = requirement.apiKey?.[0]
    if (scope !== undefined) return scope as Scope
  }
  return security.some((requirement: Record<string, unknown>) => 'bearerAuth' in requirement) ? 'session' : undefined
}
