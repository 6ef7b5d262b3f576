// Backups of the HA PostgreSQL recipe (scripts/ha-postgres.mjs) with Barman: point-in-time
// recovery from a streamed WAL archive and base backups, kept in a folder of their own that
// outlives the cluster. docs/RELIABILITY.md (Backups and restore) says what it protects against.
//
// - WAL is streamed (`barman receive-wal`, which runs pg_receivewal) from whichever node is
//   primary, through the recipe's HAProxy, over the replication slot `barman` that Patroni keeps
//   on the primary (a permanent slot of its configuration): a commit is in the archive within
//   moments, where archive_command would wait for a 16 MB segment to fill. No archive_command,
//   no SSH: Barman runs on this machine, as the user PostgreSQL runs as.
// - receive-wal stops whenever the stream breaks (a failover): it is started again at once, then
//   with a growing pause while it keeps failing.
// - Every few seconds `barman archive-wal` files the finished segments into the catalogue; a base
//   backup (pg_basebackup with an immediate checkpoint) is taken once streaming runs, then every
//   HA_BACKUP_INTERVAL_SECONDS.
// - restorePostgres() brings up a NEW PostgreSQL from the folder, at the latest point or at a
//   time: `barman recover --get-wal` (so recovery also reads the segment still being streamed),
//   the copied Patroni node's identity taken out of its configuration, started with pg_ctl on a
//   port of its own, and promoted.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/* global setTimeout, setInterval, clearTimeout, clearInterval */

const SERVER = 'pg'
export const SLOT = 'barman'
const ARCHIVE_EVERY_MS = 5000
const RESTART_MIN_MS = 250
const RESTART_MAX_MS = 5000

const asRoot = process.getuid?.() === 0
const postgresIds = () => asRoot
  ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
  : {}

/** Spawn options for a process of the postgres user, working in `home`. */
export function asPostgres (home) {
  return { ...postgresIds(), cwd: home, env: { ...process.env, HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin' } }
}

export function owned (path) {
  mkdirSync(path, { recursive: true, mode: 0o700 })
  if (asRoot) chownSync(path, postgresIds().uid, postgresIds().gid)
  return path
}

/** What is missing for backups here; undefined when nothing is. */
export function barmanMissing () {
  return spawnSync('barman', ['--version'], { stdio: 'ignore' }).error !== undefined
    ? 'barman is not on the PATH (apt-get install barman)'
    : undefined
}

const configOf = (dir) => join(dir, 'barman.conf')

/** Runs a barman command as the postgres user; resolves to its output, throws with it on failure. */
function barman (dir, args, { check = true } = {}) {
  const result = spawnSync('barman', ['-c', configOf(dir), ...args], { encoding: 'utf8', ...asPostgres(dir) })
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`
  if (check && result.status !== 0) throw new Error(`barman ${args.join(' ')} failed: ${output.trim()}`)
  return { ok: result.status === 0, output }
}

/**
 * Writes Barman's configuration for the cluster (its HAProxy port, the passwords, the binaries)
 * into `dir`, owned by the postgres user; its parent folders must let that user through.
 */
export function configureBarman ({ dir, port, bin, superuserPassword, replicationPassword }) {
  dir = resolve(dir)
  owned(dir)
  if (asRoot && spawnSync('test', ['-w', dir], { ...asPostgres('/') }).status !== 0) {
    throw new Error(`the postgres user cannot write ${dir}: pick a backup folder it can reach (not under a private home)`)
  }
  const passfile = join(dir, 'pgpass')
  writeFileSync(passfile, `127.0.0.1:${port}:*:postgres:${superuserPassword}\n127.0.0.1:${port}:*:replicator:${replicationPassword}\n`, { mode: 0o600 })
  const user = asRoot ? 'postgres' : userInfo().username
  writeFileSync(configOf(dir), `[barman]
barman_user = ${user}
barman_home = ${owned(join(dir, 'home'))}
barman_lock_directory = ${owned(join(dir, 'lock'))}
log_file = ${join(dir, 'barman.log')}
log_level = INFO

[${SERVER}]
description = "the HA recipe's cluster, through its HAProxy (the primary)"
conninfo = host=127.0.0.1 port=${port} user=postgres dbname=postgres passfile=${passfile}
streaming_conninfo = host=127.0.0.1 port=${port} user=replicator passfile=${passfile}
backup_method = postgres
streaming_archiver = on
slot_name = ${SLOT}
; Patroni keeps the slot (a slot it does not know of, it drops).
create_slot = manual
archiver = off
path_prefix = ${bin}
backup_options = concurrent_backup
immediate_checkpoint = true
minimum_redundancy = 1
retention_policy = RECOVERY WINDOW OF 7 DAYS
`)
  for (const file of [passfile, configOf(dir)]) if (asRoot) chownSync(file, postgresIds().uid, postgresIds().gid)
  return dir
}

/**
 * Starts streaming the WAL into `dir` and the archiving loop; takes a base backup once the
 * stream runs, then every `intervalSeconds`. Resolves once the first backup is done.
 */
export async function startBarman ({ dir, intervalSeconds = 6 * 3600, say = () => {} }) {
  let stopping = false
  let receiver
  let restartMs = RESTART_MIN_MS
  const log = openSync(join(dir, 'receive-wal.log'), 'a')
  const receive = () => {
    if (stopping) return
    const started = Date.now()
    // Its own process group, so pg_receivewal under it stops with it.
    receiver = spawn('barman', ['-c', configOf(dir), 'receive-wal', SERVER], { stdio: ['ignore', log, log], detached: true, ...asPostgres(dir) })
    receiver.once('exit', () => {
      receiver = undefined
      if (stopping) return
      // Streaming for a while, then broken (a failover): again at once; failing at once: back off.
      restartMs = Date.now() - started > 10_000 ? RESTART_MIN_MS : Math.min(restartMs * 2, RESTART_MAX_MS)
      setTimeout(receive, restartMs).unref()
    })
  }
  receive()

  let archiving
  const archive = () => {
    if (archiving !== undefined || stopping) return
    archiving = new Promise((resolve) => {
      const child = spawn('barman', ['-q', '-c', configOf(dir), 'archive-wal', SERVER], { stdio: 'ignore', ...asPostgres(dir) })
      child.once('exit', () => { archiving = undefined; resolve() })
    })
  }
  const archiver = setInterval(archive, ARCHIVE_EVERY_MS)
  archiver.unref()

  const backup = async () => {
    const started = Date.now()
    // --wait: until the WAL the backup needs is archived, which the loop above does; meanwhile faster.
    const fast = setInterval(archive, 500)
    try {
      const child = spawn('barman', ['-q', '-c', configOf(dir), 'backup', SERVER, '--wait'], { stdio: ['ignore', 'pipe', 'pipe'], ...asPostgres(dir) })
      let output = ''
      child.stdout.on('data', (c) => { output += c })
      child.stderr.on('data', (c) => { output += c })
      const code = await new Promise((resolve) => child.once('exit', resolve))
      if (code !== 0) throw new Error(`barman backup failed: ${output.trim()}`)
      say(`barman: base backup in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    } finally {
      clearInterval(fast)
    }
  }
  // Until the first backup is done, segments are filed at once (switch-wal and backup wait for them).
  const starting = setInterval(archive, 500)
  // The slot is active once receive-wal streams.
  for (let i = 0; ; i++) {
    if (/replication slot: OK/.test(barman(dir, ['check', SERVER], { check: false }).output) && receiver !== undefined) break
    if (i > 200) throw new Error(`Barman's WAL stream did not start; see ${join(dir, 'receive-wal.log')} and ${join(dir, 'barman.log')}`)
    await sleep(250)
  }
  // The archive holds nothing until a segment is complete, and Barman backs up only once it holds
  // one: a switch to a new segment, archived.
  try {
    const switched = spawn('barman', ['-q', '-c', configOf(dir), 'switch-wal', '--force', '--archive', '--archive-timeout', '60', SERVER], { stdio: 'ignore', ...asPostgres(dir) })
    if (await new Promise((resolve) => switched.once('exit', resolve)) !== 0) throw new Error(`barman switch-wal failed; see ${join(dir, 'barman.log')}`)
    await backup()
  } finally {
    clearInterval(starting)
  }
  let scheduled
  const schedule = () => {
    scheduled = setTimeout(() => {
      backup().catch((error) => say(`barman: ${error.message}`)).finally(() => { if (!stopping) schedule() })
    }, intervalSeconds * 1000)
    scheduled.unref()
  }
  schedule()

  return {
    dir,
    /** The pid of the receive-wal running now (its process group also holds pg_receivewal). */
    receiverPid: () => receiver?.pid,
    /** Files the finished WAL segments into the catalogue now. */
    archive: async () => { archive(); await archiving },
    /** Stops streaming, archiving and the schedule: its own processes, by their process group. */
    async stop () {
      stopping = true
      clearInterval(archiver)
      clearTimeout(scheduled)
      const group = receiver?.pid
      if (group !== undefined) {
        try { process.kill(-group, 'SIGTERM') } catch { /* gone */ }
        for (let i = 0; i < 50 && receiver !== undefined; i++) await sleep(100)
        try { process.kill(-group, 'SIGKILL') } catch { /* gone */ }
      }
      await archiving
    }
  }
}

/** Barman's backups, newest first: id and end time (to the second). */
function backups (dir) {
  const { output } = barman(dir, ['-f', 'json', 'list-backups', SERVER])
  const listed = JSON.parse(output)[SERVER] ?? []
  return listed.filter((b) => b.status === 'DONE').map((b) => ({ id: b.backup_id, end: Number(b.end_time_timestamp) * 1000 }))
}

/** Runs a PostgreSQL tool as the postgres user, in `home`. */
function postgresTool (bin, home, tool, args) {
  const result = spawnSync(join(bin, tool), args, { encoding: 'utf8', ...asPostgres(home) })
  if (result.status !== 0) throw new Error(`${tool} failed: ${result.stderr}${result.stdout}`)
  return result.stdout
}

/**
 * A new PostgreSQL from the backups in `dir`: its data in `output` (a new folder), listening on
 * 127.0.0.1:`port`, at `at` (a Date; undefined: the latest point the archive holds), promoted.
 * Returns the time it took and a stop().
 */
export async function restorePostgres ({ dir, output, port, at, bin }) {
  const startedAt = Date.now()
  dir = resolve(dir)
  output = resolve(output)
  if (!existsSync(configOf(dir))) throw new Error(`${dir} holds no Barman configuration: is it the folder the cluster backed up to (HA_BACKUP_DIR)?`)
  if (existsSync(output)) throw new Error(`${output} exists; a restore writes a new folder and never overwrites one`)
  const found = backups(dir)
  if (found.length === 0) throw new Error(`${dir} holds no finished base backup yet`)
  // A point in time is recovered from the newest backup that ended before it (Barman's end times
  // are to the second, hence the second's margin).
  const backup = at === undefined ? found[0] : found.find((b) => b.end + 1000 <= at.getTime())
  if (backup === undefined) throw new Error(`${at.toISOString()} is before the end of the oldest backup (${new Date(found.at(-1).end).toISOString()})`)
  const parent = owned(dirname(output))
  const target = at === undefined ? [] : ['--target-time', at.toISOString().replace('T', ' ').replace('Z', '+00:00'), '--target-action', 'promote']
  barman(dir, ['recover', '--get-wal', ...target, SERVER, backup.id, output])

  const restoreCommand = `barman -c ${configOf(dir)} get-wal -P ${SERVER} %f > %p`
  let copy
  try {
    copy = await startRestoredCopy({ output, parent, port, bin, restoreCommand })
  } catch (error) {
    // A time after the archive's last commit (the cluster was lost before it): the recovery ends
    // short of it, which PostgreSQL refuses; the state at that time is the latest one.
    if (at !== undefined && error instanceof RecoveryEndedEarly) {
      rmSync(output, { recursive: true, force: true })
      rmSync(error.log, { force: true })
      const latest = await restorePostgres({ dir, output, port, at: undefined, bin })
      return { ...latest, asOf: `the latest point (the archive ends before ${at.toISOString()})`, seconds: (Date.now() - startedAt) / 1000 }
    }
    throw error
  }
  return { output, port, backup: backup.id, asOf: at === undefined ? 'the latest point' : at.toISOString(), seconds: (Date.now() - startedAt) / 1000, ...copy }
}

/** A recovery that ended before its target time (PostgreSQL then refuses to start). */
export class RecoveryEndedEarly extends Error {
  constructor (log) {
    super(`the recovery ended before its target time; see ${log}`)
    this.log = log
  }
}

/**
 * Starts a restored copy of a Patroni node's data folder (`output`, with recovery.signal) as a
 * PostgreSQL of its own on 127.0.0.1:`port`, fetching WAL with `restoreCommand`,
 * and the `recovery` settings (a target time), and waits until its recovery is over and it is
 * promoted. Returns its log and a stop().
 */
export async function startRestoredCopy ({ output, parent, port, bin, restoreCommand, recovery = [] }) {
  // The copy is of a Patroni node: its own port, sockets, configuration files and replication
  // settings go; a synchronous standby it would wait for forever, too.
  const conf = join(output, 'postgresql.conf')
  const kept = readFileSync(conf, 'utf8').split('\n').filter((line) =>
    !/^\s*(port|listen_addresses|unix_socket_directories|hba_file|ident_file|synchronous_standby_names|primary_conninfo|primary_slot_name|cluster_name|archive_mode|archive_command|restore_command)\s*=/.test(line))
  writeFileSync(conf, [...kept, '# the restored copy (scripts/barman.mjs)', "listen_addresses = '127.0.0.1'", `port = ${port}`,
    `unix_socket_directories = '${output}'`, "synchronous_standby_names = ''", 'archive_mode = off', ''].join('\n'))
  const auto = join(output, 'postgresql.auto.conf')
  const autoText = existsSync(auto) ? readFileSync(auto, 'utf8') : ''
  writeFileSync(auto, [...autoText.split('\n').filter((line) => !/^restore_command\s*=/.test(line)), `restore_command = '${restoreCommand}'`, ...recovery, ''].join('\n'))
  for (const file of ['patroni.dynamic.json', 'postmaster.pid']) rmSync(join(output, file), { force: true })
  if (asRoot) chownSync(auto, postgresIds().uid, postgresIds().gid)
  const logFile = join(parent, `${output.split('/').at(-1)}.log`)
  try {
    postgresTool(bin, parent, 'pg_ctl', ['-D', output, '-l', logFile, '-w', '-t', '600', 'start'])
  } catch (error) {
    if (/recovery ended before configured recovery target was reached/.test(existsSync(logFile) ? readFileSync(logFile, 'utf8') : '')) throw new RecoveryEndedEarly(logFile)
    throw error
  }
  const stop = () => { try { postgresTool(bin, parent, 'pg_ctl', ['-D', output, '-m', 'fast', '-w', 'stop']) } catch { /* not running */ } }
  try {
    for (let i = 0; ; i++) {
      const state = spawnSync(join(bin, 'psql'), ['-h', output, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-Atc', 'select pg_is_in_recovery()'], { encoding: 'utf8', ...asPostgres(parent) })
      if (state.stdout.trim() === 'f') break
      if (i > 1200) throw new Error(`the restored PostgreSQL did not finish its recovery; see ${logFile}`)
      await sleep(100)
    }
  } catch (error) {
    stop()
    throw error
  }
  return { log: logFile, stop }
}
