// `npm run cluster`: N instances of the service on free loopback ports behind HAProxy.
//
//   DATABASE_URL=postgres://… PORT=8080 INSTANCES=3 npm run cluster
//
// Builds the service (`npm run build`; `--dev` runs the TypeScript sources through tsx instead,
// `--no-build` runs dist/ as it is, for a caller that has just built it, as `npm test` does),
// starts INSTANCES (default 3) processes on 127.0.0.1, each trusting the balancer's
// X-Forwarded-For (TRUST_PROXY=127.0.0.1), writes an HAProxy configuration to a temporary folder
// and runs `haproxy` from the PATH in the foreground, listening on HOST:PORT (default
// 127.0.0.1:8080), balancing round-robin and health-checking /health/ready. Every other variable
// (ADMIN_*, limits, LOG_LEVEL, SHUTDOWN_GRACE_MS…) passes through to the instances.
// SIGTERM, SIGINT or SIGHUP stops HAProxy and every instance (each drains), then exits 0.
//
//   PORT=8080 INSTANCES=3 npm run cluster -- --ha
//
// `--ha` brings its own PostgreSQL with automatic failover instead of DATABASE_URL: etcd, HA_NODES
// (default 2) PostgreSQL nodes under Patroni with synchronous replication, and a second HAProxy
// that routes the instances' database connections to the current primary (scripts/ha-postgres.mjs;
// docs/SCALING.md). Its data and logs are in a temporary folder of its own, removed on stop.
// Barman streams its WAL and takes base backups (the first at start, then every
// HA_BACKUP_INTERVAL_SECONDS, default 21600) into HA_BACKUP_DIR (default: a new folder under the
// system's temporary folder), which is kept: `npm run restore -- --postgres HA_BACKUP_DIR …`
// brings up a new PostgreSQL from it, at any time it covers (scripts/barman.mjs). With
// HA_BACKUP_URL=s3://BUCKET/PATH instead, the WAL (within HA_ARCHIVE_TIMEOUT_SECONDS, default 60)
// and the base backups go to object storage (scripts/barman-cloud.mjs; the AWS_* variables give
// the credentials and endpoint), and `npm run restore -- --postgres s3://BUCKET/PATH …` restores.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from './free-port.mjs'
import { cloudMissing, parseCloudUrl } from './barman-cloud.mjs'
import { haMissing, startHaPostgres } from './ha-postgres.mjs'
import { serviceArguments } from './start-command.mjs'

/* global fetch */

const say = (line) => process.stdout.write(`[cluster] ${line}\n`)
const fail = (line) => { process.stderr.write(`[cluster] ${line}\n`); process.exit(1) }

const ha = process.argv.includes('--ha')
let databaseUrl = process.env.DATABASE_URL ?? ''
if (!ha && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
  fail('DATABASE_URL must be a postgres://… URL: the instances share one PostgreSQL database (or use --ha, which starts its own)')
}
const haNodes = Number(process.env.HA_NODES ?? '2')
if (ha && (!Number.isInteger(haNodes) || haNodes < 2 || haNodes > 5)) fail(`HA_NODES must be a whole number from 2 to 5, got "${process.env.HA_NODES}"`)
if (ha && haMissing() !== undefined) fail(`--ha needs etcd, Patroni, HAProxy and PostgreSQL: ${haMissing()}`)
const backupInterval = Number(process.env.HA_BACKUP_INTERVAL_SECONDS ?? '21600')
if (ha && (!Number.isInteger(backupInterval) || backupInterval < 60)) fail(`HA_BACKUP_INTERVAL_SECONDS must be a whole number of seconds, at least 60, got "${process.env.HA_BACKUP_INTERVAL_SECONDS}"`)
const backupUrl = ha && process.env.HA_BACKUP_URL ? process.env.HA_BACKUP_URL : undefined
if (backupUrl !== undefined) {
  if (process.env.HA_BACKUP_DIR) fail('HA_BACKUP_DIR and HA_BACKUP_URL: give one (a folder for Barman streaming, or an s3:// URL for object storage)')
  try { parseCloudUrl(backupUrl) } catch (error) { fail(error.message) }
  if (cloudMissing() !== undefined) fail(`HA_BACKUP_URL needs Barman's cloud commands: ${cloudMissing()}`)
}
const archiveTimeout = Number(process.env.HA_ARCHIVE_TIMEOUT_SECONDS ?? '60')
if (backupUrl !== undefined && (!Number.isInteger(archiveTimeout) || archiveTimeout < 1 || archiveTimeout > 3600)) fail(`HA_ARCHIVE_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600, got "${process.env.HA_ARCHIVE_TIMEOUT_SECONDS}"`)
// The backups of one cluster only: Barman refuses a stream from another system.
const backupDir = ha && backupUrl === undefined ? resolve(process.env.HA_BACKUP_DIR || mkdtempSync(join(tmpdir(), 'api-ha-backups-'))) : undefined
if (backupDir !== undefined && existsSync(join(backupDir, 'barman.conf'))) fail(`HA_BACKUP_DIR ${backupDir} already holds the backups of another cluster: give a new or empty folder`)
const count = Number(process.env.INSTANCES ?? '3')
if (!Number.isInteger(count) || count < 1 || count > 32) fail(`INSTANCES must be a whole number from 1 to 32, got "${process.env.INSTANCES}"`)
const port = Number(process.env.PORT ?? '8080')
if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`PORT must be a port number, got "${process.env.PORT}"`)
const host = process.env.HOST || '127.0.0.1'
const dev = process.argv.includes('--dev')
const build = !dev && !process.argv.includes('--no-build')

if (spawnSync('haproxy', ['-v'], { stdio: 'ignore' }).error !== undefined) {
  fail('haproxy was not found on the PATH. Install it: `apt-get install haproxy` (Debian, Ubuntu), ' +
    '`dnf install haproxy` (Fedora), `brew install haproxy` (macOS); then run this again.')
}

if (build) {
  say('building (npm run build)')
  const built = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' })
  if (built.status !== 0) fail('the build failed')
}

/** Prefixes each line of a child's output, so the interleaved logs stay readable. */
function relay (stream, prefix, target) {
  let rest = ''
  stream.on('data', (chunk) => {
    const lines = (rest + chunk.toString()).split('\n')
    rest = lines.pop()
    for (const line of lines) target.write(`${prefix} ${line}\n`)
  })
}

const children = new Set()
let stopping = false
let haproxy

function run (name, command, args, env) {
  // Its own process group: a terminal's Ctrl-C (or a group-wide SIGTERM) reaches this script
  // only, which stops the children in order, each once.
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.add(child)
  relay(child.stdout, `[${name}]`, process.stdout)
  relay(child.stderr, `[${name}]`, process.stderr)
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    children.delete(child)
    if (!stopping) say(`${name} (pid ${child.pid}) exited (${signal ?? code}); ${name === 'haproxy' ? 'stopping' : 'the balancer routes around it'}`)
    if (name === 'haproxy' && !stopping) void stop(1)
    resolve()
  }))
  return child
}

async function stop (code) {
  if (stopping) return
  stopping = true
  say('stopping: HAProxy, then the instances (each drains)')
  // SIGUSR1 is HAProxy's soft stop: no new connections, the open ones finish.
  if (children.has(haproxy)) {
    haproxy.kill('SIGUSR1')
    await haproxy.exited
  }
  for (const child of children) child.kill('SIGTERM')
  await Promise.all([...children].map((child) => child.exited))
  // A database still starting is stopped once it has (it stops itself if it fails).
  const db = database ?? await databaseStarting?.catch(() => undefined)
  if (db !== undefined) {
    say(`stopping the database: Barman, HAProxy, Patroni and PostgreSQL, etcd (the backups stay in ${backupDir ?? backupUrl})`)
    await db.stop({ remove: true })
  }
  rmSync(dir, { recursive: true, force: true })
  say('stopped')
  process.exit(code)
}
process.on('SIGTERM', () => { void stop(0) })
process.on('SIGINT', () => { void stop(0) })
// The terminal it ran in closed: the children (each in its own process group) would outlive it.
process.on('SIGHUP', () => { void stop(0) })

const dir = mkdtempSync(join(tmpdir(), 'api-cluster-'))
let database, databaseStarting
if (ha) {
  say(`starting PostgreSQL with failover (${haNodes} nodes)`)
  databaseStarting = startHaPostgres({
    nodes: haNodes,
    say: (line) => say(`[postgres] ${line}`),
    ...(backupUrl === undefined
      ? { backups: { dir: backupDir, intervalSeconds: backupInterval } }
      : { cloudBackups: { url: backupUrl, archiveTimeoutSeconds: archiveTimeout, intervalSeconds: backupInterval } })
  })
  try {
    database = await databaseStarting
  } catch (error) {
    fail(`the database did not start: ${error.message}`)
  }
  if (stopping) await new Promise(() => {}) // stop() has it now
  say(`database logs: ${database.dir}`)
  databaseUrl = database.url
  say(`database: ${databaseUrl.replace(/:[^:@/]+@/, ':…@')} (the primary, through HAProxy)`)
  say(`backups (kept after stop): ${backupDir ?? backupUrl}; restore: npm run restore -- --postgres ${backupDir ?? backupUrl} --output DATA_DIR --port PORT [--at TIME]`)
}
// Each instance runs as `npm start` runs it, Node.js flags included.
const instanceArgs = serviceArguments({ fromSource: dev })
const instances = []
for (let i = 1; i <= count; i++) {
  const instancePort = await freePort()
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(instancePort),
    HOST: '127.0.0.1',
    // The balancer is on this machine; its X-Forwarded-For carries the real client address.
    TRUST_PROXY: '127.0.0.1',
    // Each instance has its own private metrics listener (a fixed port would collide).
    METRICS_PORT: String(await freePort())
  }
  const child = run(`instance ${i}`, process.execPath, instanceArgs, env)
  instances.push({ name: `i${i}`, port: instancePort, pid: child.pid, metricsPort: env.METRICS_PORT })
  say(`instance ${i}: pid ${child.pid}, http://127.0.0.1:${instancePort}, metrics 127.0.0.1:${env.METRICS_PORT}`)
}

// HAProxy starts once every instance is ready (migrations done), so it never begins with all
// of them down.
async function ready (instance) {
  for (let i = 0; i < 600; i++) {
    if (stopping) return
    try {
      if ((await fetch(`http://127.0.0.1:${instance.port}/health/ready`)).status === 200) return
    } catch {
      // Not listening yet.
    }
    await sleep(100)
  }
  say(`instance ${instance.name} is not ready after 60 s; starting the balancer anyway`)
}
await Promise.all(instances.map(ready))

// Time-outs line up with the service's: the balancer gives up on a request after 35 s (the
// service's own 30 s request limit answers first), closes idle client connections after 60 s,
// while the service keeps them 72 s, so the balancer always closes first.
const config = `global
  maxconn 4096

defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 35s
  timeout http-request 10s
  timeout http-keep-alive 60s
  timeout check 3s
  # A connection an instance refused never reached it: safe to retry elsewhere, even a POST.
  retries 3
  retry-on conn-failure
  option redispatch

  # With no instance in service (all draining, or none ready while the database is unreachable)
  # the balancer answers as an instance would: the API's 503 error body, with Retry-After.
  unique-id-format %[uuid()]
  http-error status 503 content-type "application/json; charset=utf-8" hdr retry-after 1 hdr x-request-id "%[unique-id]" lf-string '{"type":"/errors/SERVICE_UNAVAILABLE","title":"Service unavailable","status":503,"code":"SERVICE_UNAVAILABLE","message":"The service is temporarily unavailable. Try again later.","requestId":"%[unique-id]"}'

frontend api
  bind ${host}:${port}
  # The client address as this balancer saw it; whatever the client claimed is dropped, so
  # the instances (TRUST_PROXY) can believe it.
  http-request del-header X-Forwarded-For
  option forwardfor
  default_backend instances

backend instances
  balance roundrobin
  option httpchk
  http-check send meth GET uri /health/ready
  http-check expect status 200
  # Checked every second; out after 2 failures (a draining instance answers 503 at once), back in after 2 successes.
  default-server inter 1s fall 2 rise 2
${instances.map((i) => `  server ${i.name} 127.0.0.1:${i.port} check`).join('\n')}
`
const configFile = join(dir, 'haproxy.cfg')
writeFileSync(configFile, config)
say(`HAProxy configuration: ${configFile}`)
haproxy = run('haproxy', 'haproxy', ['-db', '-f', configFile], process.env)
say(`haproxy: pid ${haproxy.pid}, balancing ${count} instance(s)`)
// "ready" once the balancer itself answers readiness (it binds a moment after it starts).
const front = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
for (let i = 0; i < 300 && !stopping; i++) {
  try {
    if ((await fetch(`${front}/health/ready`)).status === 200) break
  } catch {
    // Not bound yet.
  }
  await sleep(100)
}
if (!stopping) say(`ready: ${front}`)
