import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../scripts/free-port.mjs'

// A PostgreSQL cluster of the test's own (initdb + pg_ctl, data in a temporary folder, a free
// loopback port), so that a test may stop, kill or freeze it without touching any other server.
// Only the processes of this cluster are ever signalled, by their pids.

const PG_BIN = process.env.PG_BIN ?? (() => {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(a) - Number(b))
  return versions.length > 0 ? join(root, versions.at(-1)!, 'bin') : undefined
})()

/** Why the private-cluster tests cannot run here, or undefined when they can. */
export const postgresMissing: string | undefined = PG_BIN === undefined
  ? 'no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin; set PG_BIN or install Debian\'s postgresql'
  : undefined

/**
 * The `skip` option of a test that needs a private cluster: skipped, with the reason, on a
 * machine without PostgreSQL; but never in CI (CI set), where a missing server is a failure.
 */
export const skipWithoutPostgres: string | false = postgresMissing !== undefined && process.env.CI === undefined ? postgresMissing : false

const asRoot = process.getuid?.() === 0

/**
 * Runs a command as the `postgres` user (when this runs as root), working in `home`, a folder
 * that user owns: the checkout may sit in a folder it cannot enter (mode 0700), and the
 * PostgreSQL tools change into their working directory.
 */
function run (home: string, args: string[]): string {
  const [command, ...rest] = args
  const full = asRoot ? ['runuser', '-u', 'postgres', '--', command!, ...rest] : [command!, ...rest]
  return execFileSync(full[0]!, full.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], cwd: home, env: { ...process.env, HOME: home } })
}

export interface PrivatePostgres {
  /** postgres://…/postgres on this cluster. */
  url: string
  port: number
  /** pg_ctl stop in the given mode (fast: sessions rolled back; immediate: a crash). */
  stop: (mode: 'fast' | 'immediate') => void
  start: () => void
  /** SIGSTOP / SIGCONT to the postmaster and every one of its children. */
  freeze: () => void
  thaw: () => void
  /** Stops the cluster (if running) and removes its folder. */
  destroy: () => void
}

export async function startPrivatePostgres (): Promise<PrivatePostgres> {
  if (PG_BIN === undefined) throw new Error(postgresMissing)
  const dir = mkdtempSync(join(tmpdir(), 'api-private-pg-'))
  if (asRoot) {
    const ids = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()
    const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()
    chownSync(dir, Number(ids), Number(gid))
  }
  const data = join(dir, 'data')
  const port = await freePort()
  run(dir, [join(PG_BIN, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'])
  const start = (): void => {
    run(dir, [join(PG_BIN, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on`, 'start'])
  }
  const stop = (mode: 'fast' | 'immediate'): void => {
    run(dir, [join(PG_BIN, 'pg_ctl'), '-D', data, '-m', mode, '-w', '-t', '30', 'stop'])
  }
  const postmasterPid = (): number => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
  const family = (): number[] => {
    const parent = postmasterPid()
    const children = spawnSync('pgrep', ['-P', String(parent)], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l !== '').map(Number)
    return [parent, ...children]
  }
  start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    // The postmaster first, so that it starts no new backend while the others are stopped.
    freeze: () => { for (const pid of family()) process.kill(pid, 'SIGSTOP') },
    thaw: () => { for (const pid of family().reverse()) process.kill(pid, 'SIGCONT') },
    destroy: () => {
      if (existsSync(join(data, 'postmaster.pid'))) {
        // Best effort: a cluster left frozen or half-stopped by a failed test is still removed.
        try { for (const pid of family()) process.kill(pid, 'SIGCONT') } catch { /* already gone */ }
        try { stop('immediate') } catch { /* already stopped */ }
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export const pgbouncerMissing: string | undefined = spawnSync('pgbouncer', ['--version'], { stdio: 'ignore' }).error !== undefined
  ? 'pgbouncer is not on the PATH (apt-get install pgbouncer)'
  : undefined

export interface PgBouncer {
  /** postgres://… through PgBouncer, to the database `postgres`. */
  url: string
  log: () => string
  stop: () => void
}

/**
 * PgBouncer in transaction mode in front of a private cluster, with the settings this service
 * needs: pg sends statement_timeout as a start-up parameter, which PgBouncer refuses unless told
 * to ignore it, so the limit is set on the database instead (the caller does that).
 */
export async function startPgBouncer (pg: PrivatePostgres, options: { ignoreStatementTimeout: boolean }): Promise<PgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'api-pgbouncer-'))
  const port = await freePort()
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(ini, [
    '[databases]',
    `postgres = host=127.0.0.1 port=${pg.port} dbname=postgres`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    `unix_socket_dir = ${dir}`,
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    'max_client_conn = 200',
    'default_pool_size = 10',
    ...(options.ignoreStatementTimeout ? ['ignore_startup_parameters = statement_timeout'] : []),
    `logfile = ${join(dir, 'log')}`,
    `pidfile = ${join(dir, 'pid')}`
  ].join('\n') + '\n')
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n')
  if (asRoot) execFileSync('chown', ['-R', 'postgres:postgres', dir])
  run(dir, ['pgbouncer', '-d', ini])
  for (let i = 0; i < 100 && !existsSync(join(dir, 'pid')); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'))
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    log: () => existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8') : '',
    stop: () => {
      try { process.kill(pid, 'SIGTERM') } catch { /* already gone */ }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
