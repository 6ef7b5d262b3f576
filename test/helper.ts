import type { TestContext } from 'node:test'
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import assert from 'node:assert/strict'
import type { FastifyInstance, FastifyServerOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig, type Config } from '../src/config/config.js'
import { openDatabase, type DialectName } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { checkConformance } from './conformance.js'
import { migratedDatabase } from './migrated-database.js'
import { scratchDatabase, type ScratchDatabase } from './scratch-database.js'

// Each test file builds its own app on a fresh database: a new SQLite file, or a new
// PostgreSQL database when TEST_DB=postgres (scripts/test.mjs runs the suite once per database),
// already migrated (a copy of a template: test/migrated-database.ts).

export const dialect: DialectName = process.env.TEST_DB === 'postgres' ? 'postgres' : 'sqlite'

export async function freshDatabaseUrl (): Promise<ScratchDatabase> {
  if (dialect === 'sqlite') return await scratchDatabase('api-test')
  const adminUrl = process.env.TEST_DATABASE_URL
  if (adminUrl === undefined) throw new Error('TEST_DB=postgres needs TEST_DATABASE_URL')
  return await scratchDatabase('test', adminUrl)
}

/** Like freshDatabaseUrl, but with every migration applied (copied from a migrated template). */
async function freshMigratedDatabase (): Promise<ScratchDatabase> {
  if (dialect === 'sqlite') return await migratedDatabase('api-test')
  const adminUrl = process.env.TEST_DATABASE_URL
  if (adminUrl === undefined) throw new Error('TEST_DB=postgres needs TEST_DATABASE_URL')
  return await migratedDatabase('test', adminUrl)
}

/**
 * Defaults for tests: the general, sign-up, per-address log-in and per-address mail limits are
 * out of the way (most files create many users and send many requests from one address, and a
 * sign-up's own verification mail counts against its address), and no metrics listener is
 * opened. The tests of each limit set their own values.
 */
export const QUIET_LIMITS: Record<string, string> = {
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_MINUTE: '0',
  SIGNUPS_PER_CLIENT_PER_HOUR: '1000000',
  LOGIN_FAILURES_PER_CLIENT: '1000000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000000',
  MAIL_PER_ADDRESS_PER_MINUTE: '1000000',
  MAIL_PER_ADDRESS_PER_HOUR: '1000000',
  METRICS_PORT: '0',
  // The mails tests do not capture (sign-up's verification mail, say) are written here, not
  // into the checkout's data/ folder.
  MAIL_DIR: join(tmpdir(), 'resource-api-test-mail')
}

export interface TestApp {
  app: FastifyInstance
  config: Config
  /** Base URL of the app listening on a loopback port (started on first use), for real HTTP. */
  url: () => Promise<string>
  close: () => Promise<void>
}

export async function buildTestApp (env: Record<string, string> = {}, options: { conformance?: boolean, database?: ScratchDatabase, logger?: FastifyServerOptions['logger'] } = {}): Promise<TestApp> {
  // A database of its own, or (a restart) the one another app of the test used: then dropping it is the test's.
  const { url: databaseUrl, drop } = options.database === undefined ? await freshMigratedDatabase() : { url: options.database.url, drop: async () => {} }
  // Files in a folder of the app's own (the sweep of one app must not see another's bytes).
  const storage = env.STORAGE_URL === undefined ? await mkdtemp(join(tmpdir(), 'resource-api-test-files-')) : undefined
  const config = loadConfig({ ...QUIET_LIMITS, ...(storage === undefined ? {} : { STORAGE_URL: `file:${storage}` }), ...env, DATABASE_URL: databaseUrl })
  const database = openDatabase(config.databaseUrl, { preparedStatements: config.pgPreparedStatements })
  await migrateToLatest(database.db, database.dialect)
  const app = await buildApp({ config, database, logger: options.logger ?? false })
  // Every response of the suite is checked against the OpenAPI document (see conformance.ts).
  const conformance = options.conformance === false ? { check: () => {} } : checkConformance(app)
  await app.ready()
  let base: string | undefined
  return {
    app,
    config,
    url: async () => {
      if (base === undefined) {
        await app.listen({ port: 0, host: '127.0.0.1' })
        base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
      }
      return base
    },
    close: async () => {
      await app.close()
      await drop()
      if (storage !== undefined) await rm(storage, { recursive: true, force: true })
      conformance.check()
    }
  }
}

let counter = 0
/** A unique, valid e-mail address for this run. */
/**
 * An app of one test's own, closed with it, with HTTP connections of its own too (undici's
 * global dispatcher swapped for the test): they are cut before the app closes, which would
 * otherwise wait out the server's 10 s header time limit on a kept-alive one.
 */
export async function buildAppForTest (context: TestContext, env: Record<string, string> = {}): Promise<TestApp> {
  const t = await buildTestApp(env)
  const dispatcher = getGlobalDispatcher()
  const connections = new Agent()
  setGlobalDispatcher(connections)
  context.after(async () => {
    setGlobalDispatcher(dispatcher)
    await connections.destroy()
    await t.close()
  })
  return t
}

export function uniqueEmail (prefix = 'user'): string {
  counter += 1
  return `${prefix}${counter}.${randomBytes(3).toString('hex')}@example.com`
}

export interface TestUser {
  id: number
  email: string
  name: string
  password: string
  token: string
  auth: { authorization: string }
}

/** Creates a user through the API and logs it in. */
export async function createUser (app: FastifyInstance, fields: Partial<{ email: string, name: string, password: string }> = {}): Promise<TestUser> {
  const email = fields.email ?? uniqueEmail()
  const name = fields.name ?? 'Tester'
  const password = fields.password ?? 'correct horse battery'
  const created = await app.inject({ method: 'POST', url: '/v1/users', payload: { email, name, password } })
  assert.equal(created.statusCode, 201, created.body)
  const token = await tokenOf(app, email, password)
  return { id: created.json().id, email, name, password, token, auth: { authorization: `Bearer ${token}` } }
}

export async function tokenOf (app: FastifyInstance, email: string, password: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email, password } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().token
}

/** POST /v1/sessions with this body (a password, a provider's answer, a challenge's code): the answer, whatever it is. */
export async function logIn (app: FastifyInstance, payload: unknown, options: { remoteAddress?: string, headers?: Record<string, string> } = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: '/v1/sessions', payload: payload as object, ...(options.headers === undefined ? {} : { headers: options.headers }), ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }) })
}

/** Sends a body as raw JSON text, so that escapes such as \u0000 or a lone \ud800 reach the server as written. */
export async function sendRaw (app: FastifyInstance, method: 'POST' | 'PUT' | 'PATCH', url: string, text: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return await app.inject({ method, url, headers: { 'content-type': 'application/json', ...headers }, payload: text })
}

/** Creates an admin through the ADMIN_* start-up path and logs it in. */
export async function createAdmin (app: FastifyInstance): Promise<TestUser> {
  const { ensureAdmin } = await import('../src/users/admin-bootstrap.js')
  const email = uniqueEmail('admin')
  const password = 'admin password 1'
  await ensureAdmin(app.db, email, password)
  const token = await tokenOf(app, email, password)
  const me = await app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${token}` } })
  return { id: me.json().user.id, email, name: me.json().user.name, password, token, auth: { authorization: `Bearer ${token}` } }
}

/**
 * Asserts the documented error shape: status, code, the problem members, the request id, and
 * (for VALIDATION_ERROR) exactly this set of failed fields.
 */
export function assertError (res: LightMyRequestResponse | { statusCode: number, headers: Record<string, unknown>, json: () => any }, status: number, code: string, fields?: string[]): void {
  const body = res.json()
  assert.equal(res.statusCode, status, JSON.stringify(body))
  assert.equal(body.code, code)
  assert.equal(body.status, status)
  assert.equal(body.type, `/errors/${code}`)
  assert.equal(typeof body.title, 'string')
  assert.equal(typeof body.message, 'string')
  assert.equal(body.requestId, res.headers['x-request-id'])
  assert.match(String(res.headers['content-type']), /^application\/(problem\+)?json; charset=utf-8$/)
  if (fields !== undefined) {
    assert.ok(Array.isArray(body.errors), 'errors[] present')
    const got = body.errors.map((e: { field: string }) => e.field).sort()
    assert.deepEqual(got, [...fields].sort())
    assert.equal(new Set(got).size, got.length, 'one entry per field')
  } else if (code !== 'VALIDATION_ERROR') {
    assert.equal(body.errors, undefined)
  }
}

/** A promise and the function that settles it (to hold one party of a race where a test wants it). */
export function gate (): { opened: Promise<void>, open: () => void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => { open = resolve })
  return { opened, open }
}

/** Waits until a fact holds, looking every 20 ms, for at most `ms`; fails naming what it waited for. */
export async function waitFor (what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms
  while (!await check()) {
    if (Date.now() > until) throw new Error(`waited ${ms} ms for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
