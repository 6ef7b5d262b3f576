// One pass of the suite (started by scripts/test.mjs): node's test runner through its run() API
// rather than `node --test FILES`, which sorts the files it is given by name: here they start in
// the order given, so that the longest start first and none is left running alone at the end.
// Each file runs in a process of its own, started with this process's flags (the TypeScript
// loader and test/lingering.mjs). The spec report goes to the terminal, the TAP report to a file.
//
//   node [flags] scripts/test-pass.mjs TAP_FILE CONCURRENCY TIMEOUT_MS FILE...
import { appendFileSync, createWriteStream } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PassThrough, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { run } from 'node:test'
import { spec, tap } from 'node:test/reporters'

const [tapFile, concurrency, timeout, ...files] = process.argv.slice(2)
if (tapFile === undefined || files.length === 0) throw new Error('usage: test-pass.mjs TAP_FILE CONCURRENCY TIMEOUT_MS FILE...')

const events = run({ files, concurrency: Number(concurrency), timeout: Number(timeout) })
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
const forTap = new PassThrough({ objectMode: true })
const forSpec = new PassThrough({ objectMode: true })
events.pipe(forTap)
events.pipe(forSpec)
await Promise.all([
  pipeline(forSpec, new spec(), process.stdout, { end: false }),
  pipeline(Readable.from(tap(forTap)), createWriteStream(tapFile))
])
