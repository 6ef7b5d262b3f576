import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import Provider, { type Account, type ClientMetadata, type Configuration } from 'oidc-provider'

// A real OpenID Connect provider (panva's oidc-provider, the certified implementation) on
// loopback, so that tests of a relying party run the whole protocol over HTTP: discovery, the
// authorization redirect, log-in and consent, the code exchange and the ID token's signature.
// It can be slowed down, taken down and brought back on the same port, and made to answer a
// wrong ID token or garbage at its token endpoint, to test how the relying party copes.

export interface ProviderAccount {
  sub: string
  email?: string
  email_verified?: boolean
  name?: string
}

export interface ProviderClient {
  clientId: string
  clientSecret: string
  redirectUris: string[]
  /**
   * How the client authenticates at the token endpoint; the provider accepts only this one.
   * client_secret_post by default, which is what openid-client's discovery(issuer, id, secret)
   * uses when it is given a secret and no other method.
   */
  tokenEndpointAuthMethod?: 'client_secret_post' | 'client_secret_basic'
}

export interface TestProvider {
  /** 'http://127.0.0.1:PORT', exactly the discovery document's `issuer` and the ID tokens' `iss`. */
  readonly issuer: string
  readonly port: number
  /** The provider itself, for what the harness does not cover. */
  readonly provider: Provider
  /** Tests may add or change accounts at any time; claims are read when a token is issued. */
  readonly accounts: Map<string, ProviderAccount>
  /**
   * Drives the provider's own development log-in and consent pages over HTTP, as a browser
   * would, from an authorization URL (as a relying party built it) to the redirect back to the
   * client; returns that redirect's URL (code, state and iss, or an OAuth error the provider
   * sends the client). Throws with the provider's answer when it shows an error page instead.
   * Each call is a fresh browser: no session, so the account always logs in and consents.
   */
  signIn: (authorizationUrl: string | URL, sub: string) => Promise<URL>
  /** Every answer from now on is delayed this long (0: none), to test a relying party's time limit. */
  delayMs: number
  /**
   * When set, the ID token of each successful token answer has its payload passed through this
   * function and is signed again with the provider's own key and header, so that only the
   * changed claims are wrong (another `aud`, another `nonce`, an old `exp`).
   */
  tamperIdToken: ((claims: Record<string, unknown>) => Record<string, unknown>) | undefined
  /** When set, the token endpoint answers this text, status 200 and text/html, without using the code. */
  garbageToken: string | undefined
  /** Stops listening and closes every connection, keeping the provider's state (sessions, codes). */
  stop: () => Promise<void>
  /** Listens again, on the same port. */
  start: () => Promise<void>
  /** The final stop. */
  close: () => Promise<void>
}

export interface TestProviderOptions {
  clients: ProviderClient[]
  accounts?: ProviderAccount[]
  /** 0 (the default): any free port, kept on restart. */
  port?: number
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const MAX_HOPS = 20

export async function startTestProvider (options: TestProviderOptions): Promise<TestProvider> {
  // The issuer names its port, so the port is taken before the provider is built.
  const server = createServer()
  await listen(server, options.port ?? 0)
  const port = (server.address() as AddressInfo).port
  // No trailing slash: openid-client compares the discovered issuer with the URL it was given
  // as URLs (the same either way), but the ID token's `iss` with the discovered string exactly,
  // and oidc-provider puts its issuer into both as given. Plain http needs no setting: the
  // provider marks its cookies Secure only on a request that came over https.
  const issuer = `http://127.0.0.1:${port}`

  const accounts = new Map((options.accounts ?? []).map((account) => [account.sub, account]))
  const redirectUris = options.clients.flatMap((client) => client.redirectUris)

  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = 'test-signing-key'
  const signingJwk: JWK = { ...await exportJWK(privateKey), kid, alg: 'RS256', use: 'sig' }

  const configuration: Configuration = {
    clients: options.clients.map((client): ClientMetadata => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: client.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: client.tokenEndpointAuthMethod ?? 'client_secret_post'
    })),
    // The provider's own default asks for PKCE from public clients only; a relying party that
    // forgets it should fail here as it would at a strict provider.
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => accounts.has(sub) ? accountOf(accounts, sub) : undefined,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // By default the scope's claims (email, name) go only to the userinfo endpoint when the ID
    // token comes from the token endpoint; many providers put them in the ID token too, and a
    // relying party that reads them there needs to find them.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    jwks: { keys: [signingJwk] },
    cookies: { keys: ['test-cookie-key-one', 'test-cookie-key-two'] },
    // Given as numbers: the defaults are functions that print a notice the first time they run.
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 3600, Session: 3600, Grant: 3600 },
    // The default error page is a styled HTML page; plain text makes signIn's message readable.
    renderError: (ctx, out) => {
      ctx.type = 'text'
      ctx.body = Object.entries(out).map(([key, value]) => `${key}: ${String(value)}`).join('\n')
    }
  }

  const provider = quietly(() => new Provider(issuer, configuration))
  const tokenPath = provider.pathFor('token')
  let closed = false

  const harness: TestProvider = {
    issuer,
    port,
    provider,
    accounts,
    delayMs: 0,
    tamperIdToken: undefined,
    garbageToken: undefined,
    signIn: async (authorizationUrl, sub) => await signIn(new URL(authorizationUrl), sub, accounts, redirectUris),
    stop: async () => { await stop(server) },
    start: async () => {
      if (closed) throw new Error('the test provider is closed')
      if (!server.listening) await listen(server, port)
    },
    close: async () => {
      closed = true
      await stop(server)
    }
  }

  // provider.use puts these before the provider's own routes, so they see every request.
  provider.use(async (ctx, next) => {
    if (harness.delayMs > 0) {
      // Stops waiting when the client gives up, so that no timer outlives the test.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, harness.delayMs)
        ctx.res.once('close', () => { clearTimeout(timer); resolve() })
      })
      if (!ctx.writable) return
    }
    if (ctx.path !== tokenPath) return await next()
    if (harness.garbageToken !== undefined) {
      ctx.status = 200
      ctx.type = 'text/html'
      ctx.body = harness.garbageToken
      return
    }
    await next()
    const tamper = harness.tamperIdToken
    const body = ctx.body as { id_token?: unknown } | undefined
    if (tamper !== undefined && ctx.status === 200 && typeof body?.id_token === 'string') {
      body.id_token = await resign(body.id_token, tamper, privateKey)
    }
  })
  // Koa's handler answers its own errors; the promise it returns has nothing left to report.
  const handle = provider.callback()
  server.on('request', (req, res) => { void handle(req, res) })
  return harness
}

function accountOf (accounts: Map<string, ProviderAccount>, sub: string): Account {
  return {
    accountId: sub,
    // Read when the token is issued, so a test may change the account after it was found.
    claims: () => {
      const account = accounts.get(sub) ?? { sub }
      const { email, email_verified: emailVerified, name } = account
      return {
        sub,
        ...(email !== undefined && { email }),
        ...(emailVerified !== undefined && { email_verified: emailVerified }),
        ...(name !== undefined && { name })
      }
    }
  }
}

/** Signs the changed payload with the original header (alg and kid), so only the claims differ. */
async function resign (idToken: string, tamper: (claims: Record<string, unknown>) => Record<string, unknown>, key: CryptoKey): Promise<string> {
  const header = decodeProtectedHeader(idToken)
  const claims = tamper({ ...decodeJwt(idToken) })
  return await new SignJWT(claims).setProtectedHeader({ ...header, alg: header.alg ?? 'RS256' }).sign(key)
}

/**
 * oidc-provider warns once, on console.warn, that its development log-in pages and its
 * in-memory storage are not for production; both are what a test wants, so those two notices
 * are dropped while the provider is built (synchronously: nothing else can print meanwhile).
 */
function quietly<T> (build: () => T): T {
  const warn = console.warn
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].includes('a quick start development-only')) return
    warn(...args)
  }
  try {
    return build()
  } finally {
    console.warn = warn
  }
}

async function listen (server: Server, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
}

async function stop (server: Server): Promise<void> {
  if (!server.listening) return
  const closed = new Promise<void>((resolve, reject) => { server.close((error) => { if (error) reject(error); else resolve() }) })
  // close() alone waits for kept-alive connections (the relying party's fetch pool) to end.
  server.closeAllConnections()
  await closed
}

async function signIn (start: URL, sub: string, accounts: Map<string, ProviderAccount>, redirectUris: string[]): Promise<URL> {
  if (!accounts.has(sub)) throw new Error(`signIn: no account '${sub}' at the test provider`)
  const cookies = new Map<string, string>()
  let url = start
  let form: URLSearchParams | undefined
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const response = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      redirect: 'manual',
      headers: {
        ...(cookies.size > 0 && { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') }),
        ...(form !== undefined && { 'content-type': 'application/x-www-form-urlencoded' })
      },
      body: form
    })
    keepCookies(cookies, response.headers.getSetCookie())
    const location = response.headers.get('location')
    if (REDIRECT_STATUSES.has(response.status) && location !== null) {
      await response.body?.cancel()
      const next = new URL(location, url)
      if (redirectUris.includes(`${next.origin}${next.pathname}`)) return next
      url = next
      form = undefined
      continue
    }
    const text = await response.text()
    const page = response.status === 200 ? formOf(text) : undefined
    if (page === undefined) throw new Error(`signIn: the provider answered ${response.status} at ${url.pathname}:\n${text.slice(0, 2000)}`)
    // The development pages: log-in posts prompt=login with any password, consent prompt=consent.
    form = page.fields
    if (form.get('prompt') === 'login') {
      form.set('login', sub)
      form.set('password', 'any password')
    }
    url = new URL(page.action, url)
  }
  throw new Error(`signIn: no redirect to the client after ${MAX_HOPS} steps (last at ${url.pathname})`)
}

/** The cookie jar of one sign-in: by name only (every cookie goes back to this one provider). */
function keepCookies (cookies: Map<string, string>, setCookies: string[]): void {
  for (const line of setCookies) {
    const [pair = '', ...attributes] = line.split(';')
    const separator = pair.indexOf('=')
    const name = pair.slice(0, separator).trim()
    const value = pair.slice(separator + 1).trim()
    const expires = attributes.map((a) => a.trim()).find((a) => a.toLowerCase().startsWith('expires='))
    const expired = expires !== undefined && Date.parse(expires.slice('expires='.length)) <= Date.now()
    if (value === '' || expired) cookies.delete(name)
    else cookies.set(name, value)
  }
}

/** The page's POST form: its action and the hidden fields it would send. */
function formOf (html: string): { action: string, fields: URLSearchParams } | undefined {
  const form = /<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html)
  if (form === null) return undefined
  const fields = new URLSearchParams()
  for (const input of form[2]!.matchAll(/<input\b[^>]*>/gi)) {
    const tag = input[0]
    if (!/\btype="hidden"/i.test(tag)) continue
    const name = /\bname="([^"]*)"/i.exec(tag)?.[1]
    if (name !== undefined) fields.set(unescapeHtml(name), unescapeHtml(/\bvalue="([^"]*)"/i.exec(tag)?.[1] ?? ''))
  }
  return { action: unescapeHtml(form[1]!), fields }
}

const unescapeHtml = (text: string): string =>
  text.replace(/&(amp|lt|gt|quot|#39);/g, (_, entity: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[entity] ?? '')
