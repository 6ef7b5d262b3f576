// `npm test`: the whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set,
// then the system tests (test/system: real processes, crashes, outages, the HAProxy cluster)
// once, one file at a time; they start their own PostgreSQL clusters and need its server
// binaries (initdb, pg_ctl): without them those tests are reported as skipped, except in CI
// (CI set), where they fail. Each run uses node's test runner (spec output on the terminal,
// TAP to a file for the totals).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'

function testFiles (dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.ts') ? [path] : []
  }).sort()
}

const isSystem = (file) => relative('.', file).split(sep).slice(0, 2).join('/') === 'test/system'
const only = process.argv.slice(2)
const all = only.length > 0 ? only : testFiles('test')
const files = all.filter((file) => !isSystem(file))
// TEST_SYSTEM=0 leaves the system tests out (CI's second Node.js runs the SQLite suite only).
const systemFiles = process.env.TEST_SYSTEM === '0' ? [] : all.filter(isSystem)
const databases = [...(files.length > 0 ? ['sqlite'] : []), ...(files.length > 0 && process.env.TEST_DATABASE_URL ? ['postgres'] : [])]
const tmp = mkdtempSync(join(tmpdir(), 'api-test-report-'))
const totals = { pass: 0, fail: 0, skipped: 0 }

function pass (name, passFiles, env, concurrency) {
  const started = Date.now()
  const tap = join(tmp, `${name}.tap`)
  const result = spawnSync(process.execPath, [
    '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`,
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`,
    ...passFiles
  ], { stdio: 'inherit', env: { ...process.env, ...env } })
  const report = readFileSync(tap, 'utf8')
  const count = (key) => Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(report)?.[1] ?? 0)
  const passed = count('pass'); const fail = count('fail') + (result.status !== 0 && count('fail') === 0 ? 1 : 0)
  const skipped = count('skipped') + count('todo')
  console.log(`\n${name}: ${passed} passed, ${fail} failed, ${skipped} skipped (${Math.round((Date.now() - started) / 1000)} s)`)
  totals.pass += passed; totals.fail += fail; totals.skipped += skipped
}

for (const db of databases) {
  console.log(`\n=== test suite on ${db} (${files.length} files) ===\n`)
  pass(db, files, { TEST_DB: db }, 2)
}

if (systemFiles.length > 0) {
  console.log(`\n=== system tests (${systemFiles.length} files, once, one at a time) ===\n`)
  pass('system', systemFiles, { TEST_DB: 'sqlite' }, 1)
}

console.log(`\nall passes (${[...databases, ...(systemFiles.length > 0 ? ['system'] : [])].join(', ')}):`)
console.log(`${totals.pass} passed, ${totals.fail} failed, ${totals.skipped} skipped`)
process.exit(totals.fail > 0 || totals.pass === 0 ? 1 : 0)
