import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { startServer } from './process.js'

// No abort, ever, from a native module: the SQLite driver's statements and databases are created,
// dropped, collected and left open at exit, and the process ends with 0 on SIGTERM and on SIGINT,
// on whichever Node.js runs the suite (CI runs it on 24 and 22). A native abort shows as exit
// code null (killed by SIGABRT) and an "Assertion failed" on stderr.
//
// The work is counted, not timed: each test runs its processes to the end (the child's fixed
// rounds of statements, or the server's fixed requests), each step waiting for what the process
// says or does. Each test has its own time limit (about 15 s on a loaded 2-core machine); a
// process a failed test leaves behind is killed, so that a hang fails that test alone, named.
const skip = process.env.TEST_DB === 'postgres' ? 'process-level checks run once, on the SQLite pass' : false
const CHILD = join(import.meta.dirname, 'native-soak-child.ts')
const LIMIT = { timeout: 120_000 }

describe(`native modules on Node.js ${process.version}`, { skip }, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`statements prepared, dropped and collected by the thousand; exits 0 on ${signal}`, LIMIT, async (t) => {
      for (let run = 0; run < 3; run++) {
        const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD], { stdio: ['ignore', 'pipe', 'pipe'] })
        t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
        let out = ''
        let err = ''
        child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
        child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
        const exited = once(child, 'exit') as Promise<[number | null, string | null]>
        let ended: [number | null, string | null] | undefined
        void exited.then((result) => { ended = result })
        while (!out.includes('ready') && ended === undefined) await Promise.race([once(child.stdout, 'data'), exited])
        assert.equal(ended, undefined, `ended before it was ready (exit code, signal: ${String(ended)}): ${err}`)
        assert.match(out, /ready: 9600 statements prepared, 6 databases open/, err)
        child.kill(signal)
        const [code, killedBy] = await exited
        assert.equal(killedBy, null, `killed by ${killedBy}: ${err}`)
        assert.equal(code, 0, err)
        assert.doesNotMatch(err, /Assertion failed|Segmentation/)
        assert.match(out, new RegExp(`exiting on ${signal} with 6 databases open`))
      }
    })

    test(`the server, after serving reads and writes, exits 0 on ${signal}`, LIMIT, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'api-native-soak-'))
      after(() => { rmSync(dir, { recursive: true, force: true }) })
      for (let run = 0; run < 3; run++) {
        const server = startServer({ DATABASE_URL: `file:${join(dir, 'app.db')}`, SHUTDOWN_GRACE_MS: '0' })
        t.after(() => { if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL') })
        const base = await server.listening()
        const email = `soak-${signal}-${run}@example.com`
        const signUp = await fetch(`${base}/v1/users`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'password 1', name: 'Soak' })
        })
        assert.equal(signUp.status, 201)
        for (let i = 0; i < 50; i++) assert.equal((await fetch(`${base}/v1/posts?limit=5`)).status, 200)
        server.child.kill(signal)
        assert.equal(await server.exit(), 0, server.stderr())
        assert.doesNotMatch(server.stderr(), /Assertion failed|Segmentation/)
      }
    })
  }
})
