import fastifyCors from '@fastify/cors'
import fp from 'fastify-plugin'

export interface CorsOptions {
  /** Allowed origins; none turns CORS off. */
  origins: string[]
}

// CORS answers from an onRequest hook. It is registered before the other hooks that can answer
// early (see rate-limit.ts), so that a 429 (and every other error) still carries the CORS
// headers a browser needs to read it; and after routing, whose onRoute hook must see the
// plugin's `OPTIONS *` route (it adds OPTIONS to a known path's Allow). Not strict about
// preflights: a plain OPTIONS (no Origin) gets 204 rather than the plugin's text/plain 400.
export const cors = fp<CorsOptions>(async (app, { origins }) => {
  if (origins.length === 0) return
  await app.register(fastifyCors, {
    origin: origins,
    strictPreflight: false,
    // Every method the API has (the plugin's default is GET, HEAD and POST only, which kept
    // browsers from PUT, PATCH and DELETE), and the request headers its clients send.
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['Location', 'ETag', 'Link', 'X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed']
  })
}, { name: 'cors', dependencies: ['unknown-routes'] })
