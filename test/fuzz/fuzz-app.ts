import type { TestContext } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from '../helper.js'
import { operationsOf, type Operation } from './openapi-operations.js'
import { Conformance } from './response-conformance.js'
import { startTestProvider } from '../support/oidc-provider.js'

// The app under fuzzing, its own OpenAPI document, and one `send` through which every generated
// request goes: it counts the requests and holds every answer to the document.

/** Fixed, so a run is repeatable; FUZZ_SEED replays another one, FUZZ_RUNS scales the run count. */
export const SEED = Number(process.env.FUZZ_SEED ?? 766_1122)
const SCALE = Number(process.env.FUZZ_RUNS ?? 1)
export function runs (n: number): number { return Math.max(1, Math.round(n * SCALE)) }

export const ADMIN_EMAIL = 'fuzz-admin@example.com'
export const ADMIN_PASSWORD = 'fuzz admin password'

// Limits that never refuse: the fuzzer sends many requests from one address, and a 429 would
// hide what the request itself gets.
const ENV = {
  // The second factor's secrets are sealed with it (and on PostgreSQL there is no key file).
  SECRET_KEY: '5e'.repeat(32),
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  RATE_LIMIT_PER_MINUTE: '0',
  SIGNUPS_PER_CLIENT_PER_HOUR: '1000000',
  LOGIN_FAILURES_PER_EMAIL: '1000000',
  LOGIN_FAILURES_PER_CLIENT: '1000000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000000',
  MAIL_PER_ADDRESS_PER_MINUTE: '1000000',
  MAIL_PER_ADDRESS_PER_HOUR: '1000000',
  TOKEN_FAILURES_PER_CLIENT_PER_MINUTE: '1000000',
  // Webhook endpoints the fuzzer registers point at loopback ports (nothing listens, or not a receiver).
  WEBHOOK_ALLOW_HOSTS: '127.0.0.1'
}

// The one identity provider the fuzz app signs in with: a real one on loopback, so that beginning
// a sign-in (discovery) succeeds; finishing one needs a person at the provider, which the fuzzer
// is not (its success path is tested in test/oidc/).
export const FUZZ_PROVIDER = 'fuzz'
export const FUZZ_REDIRECT = 'https://app.example/signed-in'
const FUZZ_CLIENT = { clientId: 'fuzz-client', clientSecret: 'fuzz client secret', redirectUris: [FUZZ_REDIRECT] }

export interface RawRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
}

export interface FuzzApp extends TestApp {
  operations: Operation[]
  operation: (key: string) => Operation
  /** Sends one request, counts it, and throws (naming request and response) on a 5xx or an answer the document does not describe. */
  send: (op: Operation, request: RawRequest) => Promise<LightMyRequestResponse>
  /** Requests sent so far. */
  count: () => number
  /**
   * Runs a fuzzing test body and adds its summary line to the test's output: the requests it
   * generated and the seed (and, with FUZZ_VERBOSE set, the statuses seen per operation).
   */
  counted: (t: TestContext, body: () => Promise<void>) => Promise<void>
}

/** A request and its answer, short enough for a failure message. */
export function describeExchange (request: RawRequest, res?: LightMyRequestResponse): string {
  const payload = request.payload === undefined ? '' : ` body=${JSON.stringify(String(request.payload).slice(0, 400))}`
  const answer = res === undefined ? '' : `\n  -> ${res.statusCode} ${res.body.slice(0, 600)}`
  return `${request.method} ${request.url} headers=${JSON.stringify(request.headers)}${payload}${answer}`
}

export class FuzzFailure extends Error {
  constructor (message: string, request: RawRequest, res?: LightMyRequestResponse) {
    super(`${message} (seed ${SEED})\n  request: ${describeExchange(request, res)}`)
    this.name = 'FuzzFailure'
  }
}

export async function startFuzzApp (env: Record<string, string> = {}): Promise<FuzzApp> {
  // The fuzzer holds every response to the document itself (response-conformance.ts), more
  // strictly than the suite's own check (formats, header values, the error body's status and
  // request id), which would only read the same responses a second time.
  const provider = await startTestProvider({ clients: [FUZZ_CLIENT] })
  const OIDC_PROVIDERS = JSON.stringify([{ id: FUZZ_PROVIDER, issuer: provider.issuer, ...FUZZ_CLIENT }])
  const test = await buildTestApp({ ...ENV, OIDC_PROVIDERS, ...env }, { conformance: false })
  const operations = operationsOf(test.app.swagger() as Record<string, any>)
  const conformance = new Conformance(operations)
  let sent = 0
  const statuses = new Map<string, Map<number, number>>()
  // FUZZ_SURVEY: collect every kind of mismatch instead of stopping at the first (to list findings).
  const survey = new Map<string, string>()
  if (process.env.FUZZ_SURVEY !== undefined) {
    process.on('exit', () => { for (const [kind, example] of survey) console.log(`SURVEY ${kind}\n    ${example}`) })
  }
  return {
    ...test,
    close: async () => { await test.close(); await provider.close() },
    operations,
    operation: (key) => {
      const op = operations.find((o) => o.key === key)
      if (op === undefined) throw new Error(`the document has no operation ${key}`)
      return op
    },
    send: async (op, request) => {
      sent += 1
      const res = await test.app.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, payload: request.payload })
      const seen = statuses.get(op.key) ?? new Map<number, number>()
      seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)
      statuses.set(op.key, seen)
      if (res.statusCode >= 500) throw new FuzzFailure(`server error ${res.statusCode}`, request, res)
      const problem = conformance.problem(op, { statusCode: res.statusCode, headers: res.headers, body: res.body })
      if (problem === undefined) return res
      if (process.env.FUZZ_SURVEY !== undefined) {
        const kind = `${op.key} ${res.statusCode} ${problem.replace(/"[^"]*"/g, '"…"').slice(0, 160)}`
        if (!survey.has(kind)) survey.set(kind, describeExchange(request, res))
        return res
      }
      throw new FuzzFailure(`response does not match the document: ${problem}`, request, res)
    },
    count: () => sent,
    counted: async (t, body) => {
      const before = sent
      statuses.clear()
      try {
        await body()
      } finally {
        t.diagnostic(`fuzz: ${sent - before} generated requests, seed ${SEED}`)
        if (process.env.FUZZ_VERBOSE !== undefined) {
          for (const [key, seen] of [...statuses].sort()) t.diagnostic(`  ${key}: ${[...seen].sort().map(([s, n]) => `${s}x${n}`).join(' ')}`)
        }
      }
    }
  }
}
