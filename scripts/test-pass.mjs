// One pass of the suite (started by scripts/test.mjs): node's test runner through its run() API
// rather than `node --test FILES`, which sorts the files it is given by name: here they start in
// the order given, so that the longest start first and none is left running alone at the end.
// The spec report goes to the terminal, the TAP report to a file.
//
//   node [flags] scripts/test-pass.mjs TAP_FILE CONCURRENCY TIMEOUT_MS GROUPS FILE...
//
// GROUPS 0: each file in a process of its own, CONCURRENCY at a time, started with this
// process's flags (the TypeScript loader and test/lingering.mjs).
//
// GROUPS n > 0: the files dealt into n groups, each to the group with the least seconds so far
// (by TEST_FILE_SECONDS, {file: seconds} of the longest; 3 s for any other), the heaviest group
// started first; each group's files one after another in one process (the runner's `isolation: 'none'`),
// CONCURRENCY groups at a time. A file's own process cost about 1.7 s of CPU on SQLite and 2.7 s
// on PostgreSQL before its first test (loading some 1,200 modules, compiling the response
// serializers, the first queries), two hundred times a pass: the pass took 412 s on SQLite with
// a process per file and about 300 s in groups. Each group's spec report is printed when it ends;
// their TAP reports are joined into TAP_FILE. The files of a group share a process, so they share
// what is global in it: none may change process.env or a global for longer than its own test.
// (GROUPS -1: the group itself, run by its parent.)
import { appendFileSync, createWriteStream, readFileSync, rmSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { clearTimeout, setTimeout } from 'node:timers'
import { relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PassThrough, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { run } from 'node:test'
import { spec, tap } from 'node:test/reporters'
import { endHeldProcess, LINGER_LIMIT_MS } from '../test/held-process.mjs'

const [tapFile, concurrencyText, timeout, groupsText, ...files] = process.argv.slice(2)
if (tapFile === undefined || files.length === 0) throw new Error('usage: test-pass.mjs TAP_FILE CONCURRENCY TIMEOUT_MS GROUPS FILE...')
const concurrency = Number(concurrencyText)
const groups = Number(groupsText)

if (groups > 0) await runGroups()
else await runFiles()

async function runGroups () {
  const seconds = JSON.parse(process.env.TEST_FILE_SECONDS ?? '{}')
  const dealt = Array.from({ length: Math.min(groups, files.length) }, () => ({ files: [], seconds: 0 }))
  for (const file of files) {
    const lightest = dealt.reduce((least, group) => group.seconds < least.seconds ? group : least)
    lightest.files.push(file)
    lightest.seconds += seconds[relative('.', file).split(sep).join('/')] ?? 3
  }
  const next = dealt.sort((a, b) => b.seconds - a.seconds).map((group) => group.files).entries()
  const script = fileURLToPath(import.meta.url)
  async function worker () {
    for (const [group, groupFiles] of next) {
      const groupTap = `${tapFile}.${group}`
      const child = spawn(process.execPath, [...process.execArgv, script, groupTap, '1', timeout, '-1', ...groupFiles], { stdio: ['ignore', 'pipe', 'inherit'] })
      const report = []
      child.stdout.on('data', (chunk) => report.push(chunk))
      const [code, signal] = await new Promise((resolve) => child.on('close', (...end) => resolve(end)))
      process.stdout.write(Buffer.concat(report))
      if (code !== 0) {
        process.exitCode = 1
        if (code !== 1) process.stdout.write(`\nthe process of group ${group + 1} (${groupFiles.join(', ')}) ended with ${signal ?? `exit code ${code}`}\n`)
      }
      for (const [from, to] of [[groupTap, tapFile], [`${groupTap}.failures`, `${tapFile}.failures`]]) {
        try { appendFileSync(to, readFileSync(from)); rmSync(from) } catch (error) { if (error.code !== 'ENOENT') throw error }
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

async function runFiles () {
  const events = run({ files, concurrency, timeout: Number(timeout), ...(groups === -1 ? { isolation: 'none' } : {}) })
  // Each failure, one line (where, which test, the first line of why), also to TAP_FILE.failures:
  // scripts/test.mjs repeats them after the totals, where the tail of a long run's output shows them.
  events.on('test:fail', (event) => {
    if (event.todo !== undefined || event.skip !== undefined) return
    process.exitCode = 1
    const error = event.details?.error
    if (error?.failureType === 'subtestsFailed') return // a describe whose tests failed: they are listed
    const file = event.file === undefined ? '?' : relative('.', event.file.startsWith('file:') ? fileURLToPath(event.file) : event.file)
    const where = `${file}${event.line === undefined ? '' : `:${event.line}`}`
    const why = String(error?.cause?.message ?? error?.message ?? error ?? '').split('\n')[0].slice(0, 200)
    appendFileSync(`${tapFile}.failures`, `${where}  ${event.name}${why === '' ? '' : `: ${why}`}\n`)
  })
  // A group's process can be held by what its tests left open, as a file's can; but with the
  // files in this process, the runner ends its report only when the process is about to exit,
  // and the hook of test/lingering.mjs belongs to a root test that never ends while something
  // holds it. So the same bound here: no test running and no event for that long, the process
  // ends, naming what holds it (the group fails: its totals were never reported).
  if (groups === -1) {
    let running = 0
    let idle
    // 'test:dequeue' is a test beginning to run; 'test:start' is emitted in report order, which
    // can come after the test's 'test:complete' and would cancel the bound for good.
    events.on('test:dequeue', () => { running += 1; clearTimeout(idle) })
    events.on('test:complete', () => {
      running -= 1
      clearTimeout(idle)
      if (running > 0) return
      idle = setTimeout(() => { endHeldProcess(files, `no test has run for ${LINGER_LIMIT_MS / 1000} s`, 2) }, LINGER_LIMIT_MS)
      idle.unref()
    })
  }
  const forTap = new PassThrough({ objectMode: true })
  const forSpec = new PassThrough({ objectMode: true })
  events.pipe(forTap)
  events.pipe(forSpec)
  await Promise.all([
    pipeline(forSpec, new spec(), process.stdout, { end: false }),
    pipeline(Readable.from(tap(forTap)), createWriteStream(tapFile))
  ])

}
