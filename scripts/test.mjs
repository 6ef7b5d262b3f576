// `npm test`: the whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set.
// Each run uses node's test runner (spec output on the terminal, TAP to a file for the totals).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

function testFiles (dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.ts') ? [path] : []
  }).sort()
}

const only = process.argv.slice(2)
const files = only.length > 0 ? only : testFiles('test')
const databases = ['sqlite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])]
const tmp = mkdtempSync(join(tmpdir(), 'api-test-report-'))
const totals = { pass: 0, fail: 0, skipped: 0 }

for (const db of databases) {
  console.log(`\n=== test suite on ${db} (${files.length} files) ===\n`)
  const tap = join(tmp, `${db}.tap`)
  const result = spawnSync(process.execPath, [
    '--import', 'tsx', '--test', '--test-concurrency=2',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`,
    ...files
  ], { stdio: 'inherit', env: { ...process.env, TEST_DB: db } })
  const report = readFileSync(tap, 'utf8')
  const count = (key) => Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(report)?.[1] ?? 0)
  const pass = count('pass'); const fail = count('fail') + (result.status !== 0 && count('fail') === 0 ? 1 : 0)
  const skipped = count('skipped') + count('todo')
  console.log(`\n${db}: ${pass} passed, ${fail} failed, ${skipped} skipped`)
  totals.pass += pass; totals.fail += fail; totals.skipped += skipped
}

console.log(`\nall databases (${databases.join(', ')}):`)
console.log(`${totals.pass} passed, ${totals.fail} failed, ${totals.skipped} skipped`)
process.exit(totals.fail > 0 || totals.pass === 0 ? 1 : 0)
