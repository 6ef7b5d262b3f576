import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, test } from 'node:test'
import { startServer } from './process.js'

// What a service on the embedded default loads: not pg (PostgreSQL's driver), not nodemailer
// until the first mail, not the runtime's bundled undici (an ES module import of node:http
// would load it). A probe module, imported first, notes each package resolved and, at exit,
// whether undici was loaded. One process, on the SQLite pass only.
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
process.on('exit', () => { writeSync(2, 'UNDICI ' + process.moduleLoadList.some((m) => m.includes('undici')) + '\\n') })
`

test('on SQLite, pg, nodemailer and the runtime\'s undici are not loaded; nodemailer comes with the first mail', { skip, timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-lazy-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const probe = join(dir, 'probe.mjs')
  writeFileSync(probe, PROBE)
  const server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, MAIL_DIR: join(dir, 'mail'), NODE_OPTIONS: `--import=${pathToFileURL(probe).href}` })
  after(() => { if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL') })
  const base = await server.listening()
  const packages = (): Set<string> => new Set([...server.stderr().matchAll(/^PACKAGE (\S+)$/gm)].map((match) => match[1]!))
  assert.equal((await fetch(`${base}/v1/posts`)).status, 200)
  const ready = packages()
  assert.ok(ready.has('better-sqlite3') && ready.has('fastify'), `the probe sees what is loaded: ${[...ready].join(' ')}`)
  assert.equal(ready.has('pg'), false, 'pg is not loaded on SQLite')
  assert.equal(ready.has('nodemailer'), false, 'nodemailer is not loaded before a mail')
  // A sign-up mails a link to prove the address: nodemailer is loaded then.
  const created = await fetch(`${base}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'password 1', name: 'A' }) })
  assert.equal(created.status, 201)
  await server.logged(/"msg":"mail sent"/)
  assert.equal(packages().has('nodemailer'), true)
  assert.equal(packages().has('pg'), false)
  server.child.kill('SIGTERM')
  assert.equal(await server.exit(), 0)
  // The exit is seen before the last of stderr is read.
  const stderr = server.child.stderr
  if (!stderr.readableEnded) await new Promise((resolve) => stderr.once('end', resolve))
  assert.match(server.stderr(), /^UNDICI false$/m)
})
