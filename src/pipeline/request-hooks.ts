import fp from 'fastify-plugin'
import { shuttingDown } from './drain.js'
import { answerBeforeBody } from './early-answer.js'
import { trustForwardedFor } from './forwarded-for.js'
import { checkBodyHeaders } from './json-body.js'
import { planOf } from './route-plan.js'
import { protectAnswer } from './security-headers.js'

// The service's request path: one hook per phase for every route, each running its steps in a
// fixed order from the route's plan (route-plan.ts), worked out when the route was added. A
// request goes:
//
// onRequest   the client address made trustworthy (behind TRUST_PROXY) → the shutdown's hold
//             or 503 (drain.ts) → the general rate limit (rate-limit.ts, unless the route is
//             exempt or authentication counts the request); then the route's own authentication
// preParsing  an unknown route or method answered 404/405 (unknown-routes.ts) → the body's headers
//             checked before it is read (json-body.ts: 415)
//             the body parsed (json-body.ts), the request validated (validation.ts), the handler
// onSend      X-Request-Id, the security headers (security-headers.ts), an answer given before
//             the body was read (early-answer.ts), `Connection: close` while draining
// completed   the metrics and the access line, together (request-log.ts)
//
// Each hook is a callback hook (no promise per request) that reads the plan once. CORS, when
// configured, answers preflights and adds its headers in its own onRequest hook, registered
// before this one so that every refusal here carries them.

export interface RequestHooksOptions {
  /** TRUST_PROXY names proxies: X-Forwarded-For is read, so it is first made trustworthy. */
  trustProxy: boolean
}

export const requestHooks = fp<RequestHooksOptions>(async (app, { trustProxy }) => {
  const drain = app.drain
  const limiter = app.rateLimiter
  const unrouted = app.unrouted

  app.addHook('onRequest', (request, reply, done) => {
    if (trustProxy) trustForwardedFor(request.raw.headers)
    if (drain.closing) {
      done(shuttingDown())
    } else if (drain.holding) {
      void drain.released.then(() => { done(limiter?.countRequest(request, reply)) })
    } else {
      done(limiter?.countRequest(request, reply))
    }
  })

  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.is404) {
      unrouted(request, reply)
      return
    }
    const plan = planOf(request)
    checkBodyHeaders(request, plan.takesBody, plan.upload)
    done(null, payload)
  })

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    protectAnswer(request, reply, planOf(request))
    answerBeforeBody(request, reply)
    if (drain.draining) reply.header('connection', 'close')
    done(null, payload)
  })
}, { name: 'request-hooks', dependencies: ['error-handler', 'drain', 'unknown-routes', 'route-plans', 'cors', 'json-body', 'rate-limit'] })
