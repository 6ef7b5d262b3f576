import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fp from 'fastify-plugin'
import { ApiError } from '../http/errors.js'

// The operator's console (docs/console.md) at /console/: the single-page app `npm run build`
// makes with Vite into dist/public/console (its sources in console/), served from memory. It
// works only through the public API, so this plugin serves files and nothing else:
// - the page with a strict CSP: the service's own script and stylesheet only, no inline script
//   or style, no eval, nothing from another origin (the API and images are same-origin), no
//   framing, no referrer;
// - the assets under names that change with their content (Vite's hashes), cached for a year.
// Without a build (the sources run through tsx) /console/ answers 503 saying so.
// The page names the identity providers whose redirect URIs include a page at /console/ (a meta
// element: the page may run no inline script), for its sign-in buttons: the console has no
// operation of its own to ask for them.

/** The console page's Content-Security-Policy. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  // The page's icon is an empty data: URI (no request for /favicon.ico); images are the API's files.
  "img-src 'self' data:",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join('; ')

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2'
}

/** The built console: one level up from src/ and from dist/ both. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/public/console/', import.meta.url))

interface Built { page: Buffer, assets: Map<string, { body: Buffer, type: string }> }

function readBuilt (dir: string): Built | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined
  const assets = new Map<string, { body: Buffer, type: string }>()
  const assetDir = join(dir, 'assets')
  for (const name of existsSync(assetDir) ? readdirSync(assetDir) : []) {
    const type = TYPES[extname(name)]
    if (type !== undefined) assets.set(name, { body: readFileSync(join(assetDir, name)), type })
  }
  return { page: readFileSync(join(dir, 'index.html')), assets }
}

// Not operations of the API: left out of the OpenAPI document, and public (the page signs in).
const schema = { hide: true, security: [] }

/** The page with the providers it may offer, those that may send people back to /console/. */
export function withProviders (page: Buffer, providers: ReadonlyArray<{ id: string, redirectUris: string[] }>): Buffer {
  const offered = providers.filter((provider) => provider.redirectUris.some((uri) => new URL(uri).pathname === '/console/')).map((provider) => provider.id)
  if (offered.length === 0) return page
  // Provider ids are lower-case letters, digits and hyphens (OIDC_PROVIDERS is checked at start).
  return Buffer.from(page.toString('utf8').replace('<meta name="referrer"', `<meta name="identity-providers" content="${offered.join(' ')}">\n    <meta name="referrer"`))
}

export const consolePages = fp(async (app, options: { dir?: string }) => {
  const read = readBuilt(options.dir ?? CONSOLE_DIR)
  const built = read === undefined ? undefined : { ...read, page: withProviders(read.page, app.config.oidc.providers) }
  app.get('/console', { schema }, async (_request, reply) => await reply.code(301).header('location', '/console/').send())
  app.get('/console/', { schema }, async (_request, reply) => {
    if (built === undefined) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The console is not built: run npm run build, then start the service again.' })
    return await reply.code(200).headers({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CONSOLE_CSP,
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'cache-control': 'no-cache'
    }).send(built.page)
  })
  app.get<{ Params: { name: string } }>('/console/assets/:name', { schema }, async (request, reply) => {
    const asset = built?.assets.get(request.params.name)
    if (asset === undefined) throw new ApiError('NOT_FOUND')
    return await reply.code(200).headers({
      'content-type': asset.type,
      'referrer-policy': 'no-referrer',
      'cache-control': 'public, max-age=31536000, immutable'
    }).send(asset.body)
  })
}, { name: 'console-pages' })
