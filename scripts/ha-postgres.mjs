// PostgreSQL with automatic failover, on one machine: etcd (the leader lease), two or more
// PostgreSQL nodes under Patroni with synchronous replication, and HAProxy routing database
// connections to whichever node Patroni's REST API says is the primary (GET /primary). Used by
// `npm run cluster -- --ha` and by the failover system test; docs/SCALING.md lays the same
// pieces out on several hosts.
//
// Everything listens on 127.0.0.1, on ports chosen free, with its data and logs in the folder it
// is given. Each process is started here and stopped by its own pid. Patroni and PostgreSQL run
// as the `postgres` user when this runs as root (PostgreSQL refuses to run as root); they are
// spawned with that uid directly, not through runuser, so the pids kept are the real ones.
// Every process started as that user works in a folder it owns (its working directory and
// HOME): the checkout, or root's home, may be a folder it cannot enter (mode 0700), and Patroni,
// PostgreSQL and psql change into their working directory or read their HOME.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { barmanMissing, configureBarman, SLOT, startBarman } from './barman.mjs'
import { archiveParameters, cloudBackup, cloudMissing, parseCloudUrl } from './barman-cloud.mjs'
import { freePort } from './free-port.mjs'

/* global fetch, AbortSignal, setTimeout, clearTimeout */

/** What is missing to run the HA recipe here, with the command that installs it; undefined when nothing is. */
export function haMissing () {
  const missing = []
  for (const [command, pkg] of [['etcd', 'etcd-server'], ['patroni', 'patroni'], ['patronictl', 'patroni'], ['haproxy', 'haproxy']]) {
    if (spawnSync(command, ['--version'], { stdio: 'ignore' }).error !== undefined && !missing.includes(pkg)) missing.push(pkg)
  }
  // Patroni's etcd3 client needs python-etcd (Debian: python3-etcd), which Patroni's package only recommends.
  if (!missing.includes('patroni') && spawnSync('/usr/bin/python3', ['-c', 'import etcd'], { stdio: 'ignore' }).status !== 0) missing.push('python3-etcd')
  if (postgresBin() === undefined) missing.push('postgresql')
  if (missing.length === 0) return undefined
  return `missing: ${missing.join(', ')}. Install them: \`apt-get install ${missing.join(' ')}\` (Debian, Ubuntu)`
}

/** The newest PostgreSQL server binaries under /usr/lib/postgresql, or PG_BIN. */
export function postgresBin () {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(a) - Number(b))
  return versions.length > 0 ? join(root, versions.at(-1), 'bin') : undefined
}

const asRoot = process.getuid?.() === 0
const postgresUser = asRoot
  ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
  : {}

function ownedByPostgres (path) {
  mkdirSync(path, { recursive: true, mode: 0o700 })
  if (asRoot) chownSync(path, postgresUser.uid, postgresUser.gid)
  return path
}

/** The spawn options of a process run as the `postgres` user, working in `home` (a folder that user owns). */
function asPostgres (home) {
  return { ...postgresUser, cwd: home, env: { ...process.env, HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin' } }
}

/** A process of the recipe, working in `home`: its output to a log file, its exit awaited. */
function launch (name, command, args, home, logFile) {
  const log = openSync(logFile, 'a')
  const child = spawn(command, args, { stdio: ['ignore', log, log], detached: true, ...asPostgres(home) })
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)))
  child.name = name
  return child
}

const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } }

/** Sends `signal` to a pid of ours, if it still runs; then waits up to `ms` for it to be gone. */
async function stopPid (pid, signal, ms) {
  if (pid === undefined || !alive(pid)) return true
  try { process.kill(pid, signal) } catch { return true }
  for (let waited = 0; waited < ms; waited += 50) {
    if (!alive(pid)) return true
    await sleep(50)
  }
  return !alive(pid)
}

/** `signal` first, then SIGKILL if the process is still there after `ms`. */
async function stopOrKill (pid, signal, ms) {
  if (!await stopPid(pid, signal, ms)) await stopPid(pid, 'SIGKILL', 1000)
}

async function status (url) {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1000) })).status
  } catch {
    return 0
  }
}

/**
 * Starts etcd, `nodes` Patroni nodes and HAProxy in a new temporary folder (`dir`, owned by the
 * `postgres` user); resolves once a primary has a synchronous standby, so an acknowledged commit
 * is on two nodes from the first write. With `backups: { dir, intervalSeconds }`, Barman streams
 * the WAL into `dir` (which outlives the cluster) and takes a base backup, then one every
 * `intervalSeconds` (scripts/barman.mjs); it resolves once the first backup is done. With
 * `cloudBackups: { url, archiveTimeoutSeconds, intervalSeconds }`, every node's archive_command
 * uploads the WAL to the s3:// `url` and base backups go there too (scripts/barman-cloud.mjs);
 * the credentials and endpoint are the AWS variables of this process's environment.
 */
export async function startHaPostgres ({ nodes = 2, say = () => {}, backups, cloudBackups } = {}) {
  const bin = postgresBin()
  const missing = haMissing() ?? (backups === undefined ? undefined : barmanMissing()) ?? (cloudBackups === undefined ? undefined : cloudMissing())
  if (missing !== undefined) throw new Error(missing)
  const cloudUrl = cloudBackups === undefined ? undefined : parseCloudUrl(cloudBackups.url)
  const dir = ownedByPostgres(mkdtempSync(join(tmpdir(), 'api-ha-postgres-')))
  const password = randomBytes(12).toString('hex')
  const replicationPassword = randomBytes(12).toString('hex')

  // etcd, one member: the lease store. On real hosts three members, one per failure domain.
  const etcdClient = await freePort()
  const etcdPeer = await freePort()
  const etcdData = ownedByPostgres(join(dir, 'etcd'))
  const etcd = launch('etcd', 'etcd', [
    '--name', 'etcd1', '--data-dir', etcdData,
    '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
    '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
    '--initial-cluster', `etcd1=http://127.0.0.1:${etcdPeer}`, '--initial-cluster-state', 'new'
  ], dir, join(dir, 'etcd.log'))
  say(`etcd: pid ${etcd.pid}, 127.0.0.1:${etcdClient}`)
  for (let i = 0; (await status(`http://127.0.0.1:${etcdClient}/health`)) !== 200; i++) {
    if (i > 100 || etcd.exitCode !== null) throw new Error(`etcd did not start; see ${join(dir, 'etcd.log')}`)
    await sleep(100)
  }

  const members = []
  for (let i = 1; i <= nodes; i++) {
    const name = `pg${i}`
    const home = ownedByPostgres(join(dir, name))
    const member = { name, home, pgPort: await freePort(), restPort: await freePort(), config: join(home, 'patroni.yml'), dataDir: join(home, 'data'), log: join(home, 'patroni.log') }
    // JSON is YAML: the configuration is written as JSON, so no YAML library is needed.
    writeFileSync(member.config, JSON.stringify({
      scope: 'api',
      name,
      log: { level: 'INFO' },
      restapi: { listen: `127.0.0.1:${member.restPort}`, connect_address: `127.0.0.1:${member.restPort}` },
      etcd3: { hosts: [`127.0.0.1:${etcdClient}`] },
      bootstrap: {
        dcs: {
          // The lease lasts 8 s and is renewed every second: a node that dies stops holding it
          // within 8 s. Patroni requires loop_wait + 2 × retry_timeout <= ttl.
          ttl: 8,
          loop_wait: 1,
          retry_timeout: 3,
          // A crashed primary postmaster is failed over at once instead of restarted in place.
          primary_start_timeout: 0,
          // A commit is acknowledged once a synchronous standby has it; only that standby may be
          // promoted, so nothing acknowledged is lost in a failover.
          synchronous_mode: true,
          maximum_lag_on_failover: 1048576,
          postgresql: {
            use_pg_rewind: true,
            use_slots: true,
            parameters: {
              wal_log_hints: 'on',
              max_connections: 300,
              max_wal_senders: 10,
              max_replication_slots: 10,
              hot_standby: 'on',
              // Backups: the WAL Barman has not received yet stays on the primary (its slot), up
              // to a bound, so a stopped Barman cannot fill the disk.
              ...(backups === undefined ? {} : { max_slot_wal_keep_size: '2GB', wal_keep_size: '256MB' }),
              // Object storage: every node archives while it is primary (the same parameters
              // cluster-wide); a segment the upload refused stays on the primary until it succeeds.
              ...(cloudUrl === undefined ? {} : archiveParameters({ url: cloudUrl, timeoutSeconds: cloudBackups.archiveTimeoutSeconds }))
            }
          },
          // Barman's replication slot, kept by Patroni on whichever node is primary.
          ...(backups === undefined ? {} : { slots: { [SLOT]: { type: 'physical' } } })
        },
        initdb: [{ encoding: 'UTF8' }, { locale: 'C.UTF-8' }, 'data-checksums']
      },
      postgresql: {
        listen: `127.0.0.1:${member.pgPort}`,
        connect_address: `127.0.0.1:${member.pgPort}`,
        data_dir: member.dataDir,
        bin_dir: bin,
        pgpass: join(home, 'pgpass'),
        // A new node copies the primary with pg_basebackup, which first waits for a checkpoint:
        // by default a spread one (most of checkpoint_timeout: 95 s measured here); a fast one
        // takes a moment.
        basebackup: [{ checkpoint: 'fast' }],
        // A node that lost the race to a newer timeline starts again from the primary's copy.
        remove_data_directory_on_rewind_failure: true,
        remove_data_directory_on_diverged_timelines: true,
        authentication: {
          superuser: { username: 'postgres', password },
          replication: { username: 'replicator', password: replicationPassword },
          rewind: { username: 'postgres', password }
        },
        pg_hba: [
          'local all all trust',
          'host replication replicator 127.0.0.1/32 scram-sha-256',
          'host all all 127.0.0.1/32 scram-sha-256'
        ],
        parameters: { unix_socket_directories: home, password_encryption: 'scram-sha-256' }
      },
      tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false }
    }, null, 2))
    if (asRoot) chownSync(member.config, postgresUser.uid, postgresUser.gid)
    members.push(member)
  }

  const startNode = (member) => {
    member.patroni = launch(member.name, 'patroni', [member.config], member.home, member.log)
    say(`${member.name}: Patroni pid ${member.patroni.pid}, PostgreSQL 127.0.0.1:${member.pgPort}, REST 127.0.0.1:${member.restPort}, data ${member.dataDir}`)
  }
  // The first node bootstraps the cluster alone; the others then copy it (pg_basebackup).
  startNode(members[0])

  // HAProxy: database connections to the node whose Patroni answers 200 on /primary, checked
  // every 500 ms (OPTIONS: the status alone, no body for Patroni to write to a closed check).
  // When a node stops being primary, its sessions are cut (on-marked-down shutdown-sessions), so
  // no client keeps talking to a demoted node.
  const port = await freePort()
  const haproxyConfig = join(dir, 'haproxy-postgres.cfg')
  writeFileSync(haproxyConfig, `global
  maxconn 1000

defaults
  mode tcp
  timeout connect 1s
  timeout client 30m
  timeout server 30m
  timeout check 1s

listen postgres
  bind 127.0.0.1:${port}
  option httpchk
  http-check send meth OPTIONS uri /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${members.map((m) => `  server ${m.name} 127.0.0.1:${m.pgPort} check port ${m.restPort}`).join('\n')}
`)
  const haproxy = launch('haproxy', 'haproxy', ['-db', '-f', haproxyConfig], dir, join(dir, 'haproxy-postgres.log'))
  say(`haproxy (PostgreSQL): pid ${haproxy.pid}, 127.0.0.1:${port}`)

  // The service connects as a role of its own that owns its database, not as the superuser:
  // PostgreSQL keeps a few connections for superusers (superuser_reserved_connections), so
  // Patroni and an operator can still connect when the service has used up the rest.
  const apiPassword = randomBytes(12).toString('hex')
  const cluster = {
    dir,
    url: `postgres://api:${apiPassword}@127.0.0.1:${port}/api`,
    port,
    nodes: members,
    etcd,
    haproxy,
    /** The node whose Patroni answers 200 on /primary, if one does. */
    async primary () {
      for (const m of members) if ((await status(`http://127.0.0.1:${m.restPort}/primary`)) === 200) return m
      return undefined
    },
    /**
     * The nodes that are synchronous standbys both as the primary reports them
     * (pg_stat_replication, through Patroni's GET /patroni) and in the lease store (their own
     * /sync answers 200): Patroni fails over only to a standby the store names, and the store
     * alone may lag behind a failover.
     */
    async syncStandbys () {
      const primary = await cluster.primary()
      if (primary === undefined) return []
      try {
        const state = await (await fetch(`http://127.0.0.1:${primary.restPort}/patroni`, { signal: AbortSignal.timeout(1000) })).json()
        const names = (state.replication ?? []).filter((r) => r.state === 'streaming' && r.sync_state === 'sync').map((r) => r.application_name)
        const found = []
        for (const m of members) if (names.includes(m.name) && (await status(`http://127.0.0.1:${m.restPort}/sync`)) === 200) found.push(m)
        return found
      } catch {
        return []
      }
    },
    /** Resolves once a primary answers and `standbys` synchronous standbys do too (at most `ms`). */
    async healthy (ms = 60_000, standbys = 1) {
      const started = Date.now()
      while (Date.now() - started < ms) {
        if (haproxy.exitCode !== null) throw new Error(`HAProxy exited; see ${join(dir, 'haproxy-postgres.log')}`)
        if ((await cluster.primary()) !== undefined && (await cluster.syncStandbys()).length >= standbys) return Date.now() - started
        await sleep(100)
      }
      throw new Error(`no primary with ${standbys} synchronous standby within ${ms} ms; logs in ${dir}`)
    },
    /** The postmaster's pid of a node, from its postmaster.pid (undefined when it is not running). */
    postmasterPid (member) {
      try {
        const pid = Number(readFileSync(join(member.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
        return alive(pid) ? pid : undefined
      } catch {
        return undefined
      }
    },
    startNode,
    /** Runs SQL as the superuser on one node, through its Unix socket; resolves to psql's output. */
    sql (member, command) {
      const result = spawnSync(join(bin, 'psql'), ['-h', member.home, '-p', String(member.pgPort), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-Atc', command], { encoding: 'utf8', ...asPostgres(member.home) })
      if (result.status !== 0) throw new Error(`psql on ${member.name}: ${result.stderr}`)
      return result.stdout
    },
    /** SIGKILL to a node's Patroni and its postmaster: the whole node is lost. */
    async killNode (member) {
      const postmaster = cluster.postmasterPid(member)
      // Both at once, as when the machine goes: neither sees the other go first.
      await Promise.all([stopPid(member.patroni.pid, 'SIGKILL', 2000), stopPid(postmaster, 'SIGKILL', 2000)])
      // The postmaster's children notice it is gone and exit; none may hold the port.
      for (let i = 0; i < 100 && postmaster !== undefined && spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout.trim() !== ''; i++) await sleep(50)
    },
    /** Stops HAProxy, every Patroni (each stops its PostgreSQL) and etcd, each by its pid; `remove` deletes the folder. */
    async stop ({ remove = false } = {}) {
      process.off('exit', killAll)
      await cluster.barman?.stop()
      cluster.cloud?.stop()
      await stopOrKill(haproxy.pid, 'SIGTERM', 3000)
      await Promise.all(members.map(async (m) => {
        const postmaster = cluster.postmasterPid(m)
        if (m.patroni !== undefined) await stopOrKill(m.patroni.pid, 'SIGTERM', 20_000)
        // Patroni stops its PostgreSQL on SIGTERM; one left running (Patroni killed) is stopped here.
        await stopOrKill(postmaster, 'SIGQUIT', 5000)
      }))
      await stopOrKill(etcd.pid, 'SIGTERM', 5000)
      if (remove) rmSync(dir, { recursive: true, force: true })
    }
  }

  // Should the process that started them exit without stop() (an uncaught error, a test runner
  // giving up), the processes started here go with it instead of holding their ports.
  const killAll = () => {
    const barmanGroup = cluster.barman?.receiverPid()
    if (barmanGroup !== undefined) { try { process.kill(-barmanGroup, 'SIGKILL') } catch { /* gone */ } }
    for (const pid of [haproxy.pid, ...members.flatMap((m) => [m.patroni?.pid, cluster.postmasterPid(m)]), etcd.pid]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL')
      } catch {
        // Gone already.
      }
    }
  }
  process.on('exit', killAll)
  try {
    for (let i = 0; (await cluster.primary()) === undefined; i++) {
      if (i > 600 || members[0].patroni.exitCode !== null) throw new Error(`${members[0].name} did not become primary; see ${members[0].log}`)
      await sleep(100)
    }
    cluster.sql(members[0], `create role api login password '${apiPassword}'`)
    cluster.sql(members[0], 'create database api owner api')
    for (const m of members.slice(1)) startNode(m)
    await cluster.healthy(120_000, 1)
    if (backups !== undefined) {
      configureBarman({ dir: backups.dir, port, bin, superuserPassword: password, replicationPassword })
      cluster.barman = await startBarman({ dir: backups.dir, intervalSeconds: backups.intervalSeconds, say })
      say(`barman: streaming the WAL and backing up into ${backups.dir}`)
    }
    if (cloudUrl !== undefined) {
      const backupNow = () => {
        const taken = cloudBackup({ url: cloudUrl, port, password, home: dir })
        say(`barman-cloud: base backup ${taken.id} in ${taken.seconds.toFixed(1)} s into ${cloudUrl}`)
        return taken
      }
      backupNow()
      let timer
      const schedule = () => {
        timer = setTimeout(() => {
          try { backupNow() } catch (error) { say(`barman-cloud: ${error.message}`) }
          schedule()
        }, (cloudBackups.intervalSeconds ?? 6 * 3600) * 1000)
        timer.unref()
      }
      schedule()
      cluster.cloud = { url: cloudUrl, backup: backupNow, stop: () => clearTimeout(timer) }
    }
  } catch (error) {
    await cluster.stop()
    throw error
  }
  return cluster
}
