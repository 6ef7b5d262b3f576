// `npm test`: the whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set,
// then the system tests (test/system: real processes, crashes, outages, the HAProxy cluster)
// once (two files at a time, the longest first; the two heaviest alone); they start their own PostgreSQL clusters
// and need its server binaries (initdb, pg_ctl): without them they are reported as skipped,
// except in CI (CI set), where they fail. Each run uses node's test runner (spec output on the terminal,
// TAP to a file for the totals), with a time limit (below): a test that hangs fails, named,
// instead of holding the run until CI's own limit. Arguments name test files or folders of them.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import module from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative, sep } from 'node:path'
import { withoutVerdict } from './tap-report.mjs'

function testFiles (dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.ts') ? [path] : []
  }).sort()
}

const isSystem = (file) => relative('.', file).split(sep).slice(0, 2).join('/') === 'test/system'
const only = process.argv.slice(2)
const all = only.length > 0 ? only.flatMap((path) => statSync(path).isDirectory() ? testFiles(path) : [path]) : testFiles('test')
const files = all.filter((file) => !isSystem(file))
// TEST_SYSTEM=0 leaves the system tests out (CI's second Node.js runs the SQLite suite only).
const systemFiles = process.env.TEST_SYSTEM === '0' ? [] : all.filter(isSystem)
const databases = [...(files.length > 0 ? ['sqlite'] : []), ...(files.length > 0 && process.env.TEST_DATABASE_URL ? ['postgres'] : [])]
const tmp = mkdtempSync(join(tmpdir(), 'api-test-report-'))

// The tests that start the service as a process (test/server, test/system, the restore command)
// start the built JavaScript, as `npm start` does, rather than the sources through tsx, which
// compiles every module again in every process: dist/ is built here first, from this checkout
// (incrementally: a few seconds when little changed), and the tests are told so
// (test/service-command.ts). Should the build fail, they fall back to the sources.
console.log('building dist/ for the tests that start the service as a process')
const built = spawnSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', join('dist', '.tsbuildinfo')], { stdio: 'inherit' })
const serviceEnv = built.status === 0 ? { TEST_SERVICE_BUILT: '1' } : {}
if (built.status !== 0) console.log('the build failed: those tests start the TypeScript sources through tsx instead')
// The console's page and assets (console/, Vite), which the service serves at /console/ from
// dist/public/console whether it runs built or from the sources: its browser tests need them.
const consoleBuilt = spawnSync(process.execPath, [join('node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join('console', 'vite.config.ts'), '--logLevel', 'warn'], { stdio: 'inherit' })
if (consoleBuilt.status !== 0) console.log('the console\'s build failed: its tests will fail')

// Time limits (--test-timeout). From Node.js 24 on, and on Node.js 22 for files sharing a process
// (below), the limit is that of each test and hook that sets no `timeout` of its own; one that
// does keeps its own, and a describe's own bounds its tests together. No unit test measured takes
// more than about 20 s on a loaded machine (the longest set their own limits:
// test/pipeline/early-answers.test.ts, the native-module soak); the system tests start clusters
// and set their own (up to 480 s a test, 700 s a describe). On Node.js 22 a file in a process of
// its own is bounded as a whole instead: the slowest unit file takes about 140 s (early-answers,
// whose describe stops it at 180 s), and no system file's own limits add up to more than 700 s.
//
// A file's process must end by itself once its tests have: one that timed out still holding a
// server, a socket or a child process would otherwise keep its file, and the run, going.
// test/lingering.mjs, loaded into each, fails such a file, naming what holds it, once its tests
// and hooks have ended that long (the same limit); scripts/test-pass.mjs does the same for a
// group of files sharing a process. Not --test-force-exit, which ended the
// process at once: run beside other files (--test-concurrency above 1), it can cut off the last
// events a file reports, so that a test's verdict went missing from the totals.
const [nodeMajor, nodeMinor] = process.versions.node.split('.').map(Number)

// The unit files in 12 groups, each group's files in one process (scripts/test-pass.mjs): a
// file's own process cost more CPU before its first test than many files' tests. node:test runs
// files in its own process from Node.js 22.8 on (`isolation: 'none'`). The system tests keep a
// process each: they start servers and clusters, and two run at a time.
// TEST_FILE_PROCESSES=1 gives every unit file a process of its own again.
const canGroup = nodeMajor > 22 || (nodeMajor === 22 && nodeMinor >= 8)
const groupsOfFiles = canGroup && process.env.TEST_FILE_PROCESSES !== '1' ? 12 : 0
const perTest = (groups) => nodeMajor >= 24 || groups > 0
const limits = { unit: perTest(groupsOfFiles) ? 120_000 : 600_000, system: perTest(0) ? 600_000 : 900_000 }
const limitText = (ms, groups) => perTest(groups)
  ? `${ms / 1000} s a test or hook without a timeout of its own (Node.js ${process.version})`
  : `${ms / 1000} s a test file (Node.js ${process.version} applies --test-timeout to whole files)`
const totals = { pass: 0, fail: 0, skipped: 0 }
const failures = []

// How a test file's TypeScript runs: on the runtime's own type stripping with test/strip-types.mjs
// (Node.js 22.15 and newer; 22.15–22.17 need the flag that 22.18 made the default), or through
// tsx on an older Node.js 22. V8's compile cache (NODE_COMPILE_CACHE, one folder in the system's
// temporary folder, kept between runs) spares every file's process compiling the same modules
// again: with both, a file's fixed cost (loading the service and its dependencies) is about a
// third less CPU.
const typeScript = typeof module.registerHooks === 'function'
  ? [...(process.features.typescript ? [] : ['--experimental-strip-types']), '--import', './test/strip-types.mjs']
  : ['--import', 'tsx']
const compileCache = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'resource-api-test-compile-cache')

// Files start in this order, the rest after them by name: a pass ends when its last file does,
// so the longest go first rather than wherever their names put them. Their seconds (measured on
// PostgreSQL; of the system tests, run two at a time) also weigh them when the unit files are
// dealt into groups (scripts/test-pass.mjs); a file not listed takes about 3 s.
const LONGEST_FIRST = [
  ['pipeline/early-answers', 90], ['api-keys/api-keys', 20], ['events/event-stream', 20], ['webhooks/deliveries', 20],
  ['pipeline/client-errors', 15], ['fuzz/valid-requests', 15], ['mail/mail-delivery', 15],
  ['system/shutdown-drain', 105], ['system/cluster', 80], ['system/backup-sqlite', 75]
].map(([name, seconds]) => [`test/${name}.test.ts`, seconds])
const longest = LONGEST_FIRST.map(([file]) => file)
function ordered (passFiles) {
  const rank = (file) => { const at = longest.indexOf(relative('.', file).split(sep).join('/')); return at === -1 ? longest.length : at }
  return passFiles.map((file, at) => ({ file, at })).sort((a, b) => rank(a.file) - rank(b.file) || a.at - b.at).map(({ file }) => file)
}

function pass (name, passFiles, env, concurrency, timeout, groups = 0) {
  const started = Date.now()
  const tap = join(tmp, `${name}.tap`)
  console.log(`time limit: ${limitText(timeout, groups)}\n`)
  const result = spawnSync(process.execPath, [
    ...typeScript, '--import', './test/lingering.mjs', join('scripts', 'test-pass.mjs'), tap, String(concurrency), String(timeout), String(groups),
    ...ordered(passFiles)
  ], { stdio: 'inherit', env: { ...process.env, ...serviceEnv, NODE_COMPILE_CACHE: compileCache, TEST_LINGER_LIMIT_MS: String(timeout), TEST_FILE_SECONDS: JSON.stringify(Object.fromEntries(LONGEST_FIRST)), ...env } })
  const report = readFileSync(tap, 'utf8')
  // One report, or one a group joined end to end: every total of the key, added up.
  const count = (key) => [...report.matchAll(new RegExp(`^# ${key} (\\d+)$`, 'gm'))].reduce((sum, match) => sum + Number(match[1]), 0)
  // A test that ran out of time is counted `cancelled` (and so are those of a file that did).
  const unfinished = withoutVerdict(report)
  for (const test of unfinished) console.log(`started, but no verdict reported: ${test}`)
  const failuresFile = `${tap}.failures`
  const listed = existsSync(failuresFile) ? readFileSync(failuresFile, 'utf8').split('\n').filter((line) => line !== '') : []
  failures.push(...[...listed, ...unfinished.map((test) => `${test}: started, but no verdict reported`)].map((line) => `${name}: ${line}`))
  const failed = count('fail') + count('cancelled') + unfinished.length
  const passed = count('pass'); const fail = failed + (result.status !== 0 && failed === 0 ? 1 : 0)
  const skipped = count('skipped') + count('todo')
  console.log(`\n${name}: ${passed} passed, ${fail} failed, ${skipped} skipped (${Math.round((Date.now() - started) / 1000)} s)`)
  totals.pass += passed; totals.fail += fail; totals.skipped += skipped
}

for (const db of databases) {
  console.log(`\n=== test suite on ${db} (${files.length} files) ===\n`)
  pass(db, files, { TEST_DB: db }, 2, limits.unit, groupsOfFiles)
}

// The system tests two files at a time: each spends much of its time waiting (for a grace period
// to end, a replica to catch up, a store to come back), and each asserts what happened, not how
// fast, on ports it found free and in folders of its own. One at a time they took 813–1,048 s.
// Except the two that run PostgreSQL under Patroni with many writing clients and restore through
// Barman's Python commands (the failover drill, the PostgreSQL restore drills): they run first,
// alone, each with the machine to itself. TEST_SYSTEM_CONCURRENCY=1 runs every file alone.
const ALONE = new Set(['test/system/failover.test.ts', 'test/system/backup-postgres.test.ts'])
const systemConcurrency = Number(process.env.TEST_SYSTEM_CONCURRENCY ?? 2)
const systemAlone = systemFiles.filter((file) => ALONE.has(relative('.', file).split(sep).join('/')))
const systemShared = systemFiles.filter((file) => !systemAlone.includes(file))
if (systemAlone.length > 0) {
  console.log(`\n=== system tests, alone (${systemAlone.length} files, once, one at a time) ===\n`)
  pass('system (alone)', systemAlone, { TEST_DB: 'sqlite' }, 1, limits.system)
}
if (systemShared.length > 0) {
  console.log(`\n=== system tests (${systemShared.length} files, once, ${systemConcurrency} at a time) ===\n`)
  pass('system', systemShared, { TEST_DB: 'sqlite' }, systemConcurrency, limits.system)
}

console.log(`\nall passes (${[...databases, ...(systemFiles.length > 0 ? ['system'] : [])].join(', ')}):`)
console.log(`${totals.pass} passed, ${totals.fail} failed, ${totals.skipped} skipped`)
if (failures.length > 0) console.log(`\nfailed:\n${failures.map((line) => `  ${line}`).join('\n')}`)
process.exit(totals.fail > 0 || totals.pass === 0 ? 1 : 0)
