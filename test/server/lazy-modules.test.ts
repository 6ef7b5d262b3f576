import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, test } from 'node:test'
import { startServer } from './process.js'

// What a service on the embedded default loads: not pg (PostgreSQL's driver), not nodemailer
// until the first mail, not the packages of features a process may never use (provider sign-in,
// a second factor, multipart uploads, webhook signatures), not the runtime's bundled undici (an
// ES module import of node:http would load it), and no ICU data (the first locale-sensitive
// call pages several MiB of it in). A probe module, imported first, notes each package resolved,
// each locale-sensitive call and, at exit, whether undici was loaded. One process, on the SQLite
// pass only.
const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false

const PROBE = `
import { registerHooks } from 'node:module'
import { writeSync } from 'node:fs'
const seen = new Set()
registerHooks({ resolve (specifier, context, next) {
  const resolved = next(specifier, context)
  const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(resolved.url)?.[1]
  if (name !== undefined && !seen.has(name)) { seen.add(name); writeSync(2, 'PACKAGE ' + name + '\\n') }
  return resolved
} })
const locale = (name) => { writeSync(2, 'LOCALE ' + name + ' ' + JSON.stringify(new Error().stack.split('\\n').slice(2, 5).join(' | ')) + '\\n') }
for (const [owner, names] of [[Number.prototype, ['toLocaleString']], [BigInt.prototype, ['toLocaleString']], [Array.prototype, ['toLocaleString']],
  [Date.prototype, ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']], [String.prototype, ['localeCompare', 'toLocaleUpperCase', 'toLocaleLowerCase']]]) {
  for (const name of names) {
    const original = owner[name]
    owner[name] = function (...args) { locale(name); return original.apply(this, args) }
  }
}
for (const name of Object.getOwnPropertyNames(Intl)) {
  if (typeof Intl[name] !== 'function') continue
  Intl[name] = new Proxy(Intl[name], { construct (target, args, newTarget) { locale('Intl.' + name); return Reflect.construct(target, args, newTarget) }, apply (target, self, args) { locale('Intl.' + name); return Reflect.apply(target, self, args) } })
}
process.on('exit', () => { writeSync(2, 'UNDICI ' + process.moduleLoadList.some((m) => m.includes('undici')) + '\\n') })
`

const UNUSED_AT_START = ['pg', 'nodemailer', 'openid-client', 'otpauth', 'busboy', 'standardwebhooks']

test('on SQLite, pg, the packages of features not yet used and the runtime\'s undici are not loaded, nor ICU data; nodemailer comes with the first mail', { skip, timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-lazy-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const probe = join(dir, 'probe.mjs')
  writeFileSync(probe, PROBE)
  const start = (): ReturnType<typeof startServer> => {
    const server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, MAIL_DIR: join(dir, 'mail'), NODE_OPTIONS: `--import=${pathToFileURL(probe).href}` })
    after(() => { if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL') })
    return server
  }
  /** Stops the process and returns all it wrote to stderr (the exit is seen before the last of stderr is read). */
  const stop = async (server: ReturnType<typeof startServer>): Promise<string> => {
    server.child.kill('SIGTERM')
    assert.equal(await server.exit(), 0)
    const stderr = server.child.stderr
    if (!stderr.readableEnded) await new Promise((resolve) => stderr.once('end', resolve))
    return server.stderr()
  }
  const localeCalls = (stderr: string): string[] => [...stderr.matchAll(/^LOCALE .*$/gm)].map((match) => match[0])
  const server = start()
  const base = await server.listening()
  const packages = (): Set<string> => new Set([...server.stderr().matchAll(/^PACKAGE (\S+)$/gm)].map((match) => match[1]!))
  assert.equal((await fetch(`${base}/v1/posts`)).status, 200)
  const ready = packages()
  assert.ok(ready.has('better-sqlite3') && ready.has('fastify'), `the probe sees what is loaded: ${[...ready].join(' ')}`)
  for (const name of UNUSED_AT_START) assert.equal(ready.has(name), false, `${name} is not loaded at start`)
  // A sign-up mails a link to prove the address: nodemailer is loaded then.
  const created = await fetch(`${base}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'password 1', name: 'A' }) })
  assert.equal(created.status, 201)
  await server.logged(/"msg":"mail sent"/)
  assert.equal(packages().has('nodemailer'), true)
  assert.equal(packages().has('pg'), false)
  const stderr = await stop(server)
  assert.match(stderr, /^UNDICI false$/m)
  assert.deepEqual(localeCalls(stderr), [], 'no locale-sensitive call (it would load ICU data)')
  // A restart on the same file checks the migrations already run (ordering them by name is where
  // a locale-sensitive comparison would come in).
  const again = start()
  assert.equal((await fetch(`${await again.listening()}/v1/posts`)).status, 200)
  assert.deepEqual(localeCalls(await stop(again)), [], 'no locale-sensitive call after a restart')
})
