import { isIP } from 'node:net'

// OIDC_PROVIDERS: the identity providers people may sign in with, as JSON (docs/accounts.md):
//   [{"id": "gitlab", "issuer": "https://gitlab.com", "clientId": "…", "clientSecret": "…",
//     "redirectUris": ["https://app.example/signed-in"]}]
// Each provider is found by discovery from its issuer. A bad value stops start-up with one line
// naming the variable; the line never repeats a client secret.

export interface OidcProvider {
  /** The name clients use (`provider`), and the one an identity is stored under. */
  id: string
  /** The issuer as its discovery document states it (https, or http on a loopback address). */
  issuer: string
  clientId: string
  clientSecret: string
  /** The client's pages a provider may send people back to; a flow names one of them exactly. */
  redirectUris: string[]
}

export interface OidcConfig {
  providers: OidcProvider[]
  /** How long one request to a provider (discovery, token, keys) may take. */
  timeoutSeconds: number
}

export class OidcConfigError extends Error {}

export const PROVIDER_ID = /^[a-z0-9][a-z0-9_-]{0,31}$/
const KEYS = new Set(['id', 'issuer', 'clientId', 'clientSecret', 'redirectUris'])

function isLoopback (hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '')
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

/** An absolute http(s) URL without credentials or fragment; http only on a loopback address. */
function secureUrl (raw: unknown, what: string, allowQuery: boolean): string {
  if (typeof raw !== 'string' || !URL.canParse(raw)) throw new OidcConfigError(`${what} must be an absolute URL`)
  const url = new URL(raw)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new OidcConfigError(`${what} must be https (http only on a loopback address), got "${raw}"`)
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '' || (!allowQuery && url.search !== '')) {
    throw new OidcConfigError(`${what} must not carry credentials, a fragment${allowQuery ? '' : ' or a query'}, got "${raw}"`)
  }
  return raw
}

function provider (raw: unknown, index: number): OidcProvider {
  const where = `provider ${index + 1}`
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new OidcConfigError(`${where} is not an object`)
  const entry = raw as Record<string, unknown>
  for (const key of Object.keys(entry)) if (!KEYS.has(key)) throw new OidcConfigError(`${where} has an unknown member "${key}"`)
  const id = entry.id
  if (typeof id !== 'string' || !PROVIDER_ID.test(id)) throw new OidcConfigError(`${where}: "id" must be 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit`)
  const named = `provider "${id}"`
  const issuer = secureUrl(entry.issuer, `${named}: "issuer"`, false)
  if (typeof entry.clientId !== 'string' || entry.clientId === '' || entry.clientId.length > 255) throw new OidcConfigError(`${named}: "clientId" must be a non-empty string`)
  if (typeof entry.clientSecret !== 'string' || entry.clientSecret === '') throw new OidcConfigError(`${named}: "clientSecret" must be a non-empty string`)
  const uris = entry.redirectUris
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20) throw new OidcConfigError(`${named}: "redirectUris" must list 1 to 20 URLs`)
  return {
    id,
    issuer,
    clientId: entry.clientId,
    clientSecret: entry.clientSecret,
    redirectUris: uris.map((uri, i) => secureUrl(uri, `${named}: "redirectUris"[${i}]`, true))
  }
}

/** The providers of OIDC_PROVIDERS (none when unset); throws OidcConfigError naming what is wrong. */
export function parseOidcProviders (raw: string | undefined): OidcProvider[] {
  if (raw === undefined || raw.trim() === '') return []
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw new OidcConfigError('is not JSON (an array of providers)')
  }
  if (!Array.isArray(value) || value.length > 20) throw new OidcConfigError('must be a JSON array of at most 20 providers')
  const providers = value.map(provider)
  const seen = new Set<string>()
  for (const { id } of providers) {
    if (seen.has(id)) throw new OidcConfigError(`names the provider "${id}" twice`)
    seen.add(id)
  }
  return providers
}
