import type { FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { ACCOUNT_CSS, ACCOUNT_JS, EMAIL_VERIFICATION_HTML, PASSWORD_RESET_HTML } from './account-pages.assets.js'

// The two pages a person opens from a mail: /account/email-verification and
// /account/password-reset, each with `?token=…`. Why they are made this way:
// - Mail scanners and link previewers open every link in a mail. Opening a page therefore
//   spends nothing: the GET answers the same static page whatever the query, and only the
//   person pressing the button makes the page's script send the token (POST
//   /v1/email-verifications, /v1/password-resets).
// - The token stays in the browser: the server never reads the query (no querystring schema,
//   so a query of any shape is no error either), and the script drops the token from the
//   address (history.replaceState) once it has read it. No-referrer keeps it out of Referer
//   headers, no-store out of caches.
// - A strict CSP: only the service's own script and stylesheet (account.js, account.css), no
//   inline script or style, no other origin, no framing, no form sent by the browser itself.

/** The pages' Content-Security-Policy. */
export const ACCOUNT_PAGES_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join('; ')

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': ACCOUNT_PAGES_CSP,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY'
}

/** The script and the stylesheet hold no secret and change only with a release. */
const ASSET_HEADERS = {
  'referrer-policy': 'no-referrer',
  'cache-control': 'public, max-age=300'
}

// Not operations of the API: left out of the OpenAPI document, and public.
const schema = { hide: true, security: [] }

function send (reply: FastifyReply, headers: Record<string, string>, body: string): FastifyReply {
  return reply.code(200).headers(headers).send(body)
}

export const accountPages = fp(async (app) => {
  // The handlers never look at the request: the token in the address is for the page's script.
  app.get('/account/email-verification', { schema }, async (_request, reply) => send(reply, PAGE_HEADERS, EMAIL_VERIFICATION_HTML))
  app.get('/account/password-reset', { schema }, async (_request, reply) => send(reply, PAGE_HEADERS, PASSWORD_RESET_HTML))
  app.get('/account/account.js', { schema }, async (_request, reply) => send(reply, { ...ASSET_HEADERS, 'content-type': 'text/javascript; charset=utf-8' }, ACCOUNT_JS))
  app.get('/account/account.css', { schema }, async (_request, reply) => send(reply, { ...ASSET_HEADERS, 'content-type': 'text/css; charset=utf-8' }, ACCOUNT_CSS))
}, { name: 'account-pages' })
