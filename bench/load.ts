// Processes and load for `npm run bench` and `npm run bench:ceiling`: start the service (as
// `npm start` does), the floor or the peer on a loopback port, pinned to one core when taskset
// exists; wait until it answers; sample its memory; load it from the other core, with autocannon
// in this process or with wrk (a C load generator, in a child process), and measure what that
// costs the generator and, read from /proc around a run, what it costs the server per answered
// request (withServerCpu).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import { freePort } from '../scripts/free-port.mjs'

const ROOT = resolve(import.meta.dirname, '..')

export const PINNED = cpus().length >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0

/** Pins this process (the load generator), every thread of it, to the second core. */
export function pinLoadGenerator (): void {
  if (PINNED) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
}

export interface Server {
  name: string
  url: string
  process: ChildProcess
  /** Highest resident set size seen since the last reset, the process and those it started (the image process) together, in MiB (sampled every 200 ms). */
  peakRss: () => number
  resetPeak: () => void
  /** The kernel's high-water mark of resident memory for the whole life of the process, in MiB. */
  highWater: () => number
  stop: () => Promise<void>
}

/** The resident memory of a process and of the processes it started (the image process), in MiB. */
function treeRss (pid: number): number {
  let children: string[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter((c) => c !== '')
  } catch {
    // Gone, or a kernel without the list: the process alone.
  }
  return status(pid, 'VmRSS') + children.reduce((sum, c) => sum + treeRss(Number(c)), 0)
}

function status (pid: number, field: string): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(field + ':'))
    return line === undefined ? 0 : Number(/(\d+)/.exec(line)![1]) / 1024
  } catch {
    return 0
  }
}

export async function startServer (name: string, args: string[], env: Record<string, string>, logFile: string, port: number): Promise<Server> {
  const log = openSync(logFile, 'a')
  const command = PINNED ? 'taskset' : process.execPath
  const argv = PINNED ? ['-c', '0', process.execPath, ...args] : args
  const child = spawn(command, argv, { env: { ...process.env, ...env }, stdio: ['ignore', log, log] })
  closeSync(log)
  let exited = false
  child.once('exit', () => { exited = true })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (exited) throw new Error(`${name} exited during start-up; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
    if (Date.now() > deadline) throw new Error(`${name} did not become ready in 60 s; see ${logFile}`)
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) break
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  // Its CPU time is read from /proc/<pid>/stat (withServerCpu), so the pid must be the node
  // process that serves: taskset sets the affinity and execs node in place, keeping the pid.
  const exe = realpathSync(`/proc/${child.pid!}/exe`)
  if (exe !== realpathSync(process.execPath)) {
    child.kill('SIGKILL')
    throw new Error(`${name}: process ${child.pid!} runs ${exe}, not node (${process.execPath}); its CPU time would not be the server's`)
  }
  let peak = 0
  const sampler = setInterval(() => { peak = Math.max(peak, treeRss(child.pid!)) }, 200)
  return {
    name,
    url,
    process: child,
    peakRss: () => Math.max(peak, treeRss(child.pid!)),
    resetPeak: () => { peak = 0 },
    highWater: () => status(child.pid!, 'VmHWM'),
    stop: async () => {
      clearInterval(sampler)
      if (exited) return
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 15_000)
      await gone
      clearTimeout(timer)
    }
  }
}

export interface Load {
  connections: number
  /** Seconds, or a fixed number of requests when `amount` is given. */
  seconds: number
  amount?: number
  requests: autocannon.Request[]
}

export interface Measured {
  rps: number
  p50: number
  p99: number
  total: number
  /** Responses with a 2xx or 3xx status: the requests the server answered, that its CPU time is divided by. */
  answered: number
  /** Responses outside 2xx, errors and timeouts: a measurement with any is not one. */
  bad: number
  badDetail: string
  /**
   * CPU time of the load generator over the run (this process for autocannon, the wrk process for
   * wrk), as a share of one core. Near 1, the generator, not the server, may have set the pace.
   */
  generatorCpu: number
}

export interface Running { done: Promise<Measured>, stop: () => void }

/** Starts a load; `done` settles when it ends (its duration or amount reached, or stop()). */
export function start (url: string, load: Load): Running {
  let instance: { stop: () => void } | undefined
  const cpu = process.cpuUsage()
  const started = performance.now()
  const done = new Promise<Measured>((resolve, reject) => {
    instance = autocannon({
      url,
      connections: load.connections,
      ...(load.amount !== undefined ? { amount: load.amount } : { duration: load.seconds }),
      requests: load.requests
    }, (error, result) => {
      if (error !== null && error !== undefined) { reject(error); return }
      const used = process.cpuUsage(cpu)
      const generatorCpu = (used.user + used.system) / 1000 / (performance.now() - started)
      const seconds = (result.finish.getTime() - result.start.getTime()) / 1000
      const bad = result.non2xx + result.errors + result.timeouts
      resolve({
        rps: result.requests.total / seconds,
        p50: result.latency.p50,
        p99: result.latency.p99,
        total: result.requests.total,
        answered: result['2xx'] + result['3xx'],
        bad,
        badDetail: bad === 0 ? '' : `non-2xx ${result.non2xx} (${JSON.stringify(result.statusCodeStats)}), errors ${result.errors}, timeouts ${result.timeouts}`,
        generatorCpu
      })
    })
  })
  return { done, stop: () => { instance?.stop() } }
}

export async function measure (url: string, load: Load): Promise<Measured> {
  return await start(url, load).done
}

/** Whether `wrk` is on the PATH. */
export const WRK = spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status === 0

/** A GET for wrk: one fixed path, or `prefix` + a random id in `ids` (both ends included) + `suffix`. */
export type Read = { path: string } | { prefix: string, ids: { first: number, last: number }, suffix?: string }

/** A whole number from `range.first` to `range.last`, both included. */
export function randomIn (range: { first: number, last: number }): number {
  return range.first + Math.floor(Math.random() * (range.last - range.first + 1))
}

/** The same GET for autocannon (which draws the id per request), as the smoke runs and runs without wrk send it. */
export function readRequests (read: Read): autocannon.Request[] {
  return ['path' in read
    ? { method: 'GET', path: read.path }
    : { method: 'GET', setupRequest: (r) => ({ ...r, path: `${read.prefix}${randomIn(read.ids)}${read.suffix ?? ''}` }) }]
}

/** A Lua string literal of a URL path (ASCII, so JSON's escapes are Lua's). */
const lua = (text: string) => JSON.stringify(text)

/**
 * `read` for `seconds` with `connections` connections, by wrk: one thread, pinned to core 1 when
 * the servers are pinned to core 0, run from a Lua script written to a temporary file. The
 * script's done() prints wrk's own summary in fixed units (its counts, run time and latency
 * percentiles in µs; the same numbers its text report rounds) and os.clock(): the CPU time of
 * the whole wrk process, all its threads, which is the generator's CPU time.
 *
 * wrk counts as failures responses with a status ≥ 400 ("Non-2xx or 3xx responses" in its text
 * report: 3xx are not counted, unlike autocannon's non2xx) and socket errors: connect, read,
 * write and timeouts (no answer within 10 s, autocannon's default).
 */
export async function measureWrk (url: string, read: Read, connections: number, seconds: number): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
  try {
    const script = join(dir, 'load.lua')
    const lines: string[] = []
    if ('ids' in read) {
      lines.push(
        `math.randomseed(${Math.floor(Math.random() * 2 ** 31)})`,
        `local prefix, first, last, suffix = ${lua(read.prefix)}, ${read.ids.first}, ${read.ids.last}, ${lua(read.suffix ?? '')}`,
        'request = function() return wrk.format("GET", prefix .. math.random(first, last) .. suffix) end'
      )
    }
    lines.push(
      'done = function(summary, latency, requests)',
      '  local e = summary.errors',
      '  io.write(string.format("\\nBENCH-WRK %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.6f\\n", summary.requests, summary.duration,',
      '    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50), latency:percentile(99), os.clock()))',
      'end'
    )
    writeFileSync(script, lines.join('\n') + '\n')
    const wrk = ['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', script, url + ('path' in read ? read.path : '')]
    const [command, ...argv] = PINNED ? ['taskset', '-c', '1', ...wrk] : wrk
    const started = performance.now()
    const { code, stdout, stderr } = await new Promise<{ code: number | null, stdout: string, stderr: string }>((resolve, reject) => {
      const child = spawn(command!, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
      child.once('error', reject)
      child.once('close', (code) => { resolve({ code, stdout, stderr }) })
    })
    const wall = performance.now() - started
    const summary = /^BENCH-WRK (.+)$/m.exec(stdout)
    if (code !== 0 || summary === null) throw new Error(`${command} ${argv.join(' ')} exited with ${code}:\n${stdout}${stderr}`)
    const [requests, duration, connect, readErrors, write, status, timeout, p50, p99, cpu] = summary[1]!.split(' ').map(Number) as [number, number, number, number, number, number, number, number, number, number]
    const errors = connect + readErrors + write
    const bad = status + errors + timeout
    const ms = (us: number) => Math.round(us / 10) / 100
    return {
      rps: requests / (duration / 1e6),
      p50: ms(p50),
      p99: ms(p99),
      total: requests,
      // wrk's `requests` counts every response; `status` those of 400 and over.
      answered: requests - status,
      bad,
      badDetail: bad === 0
        ? ''
        : `non-2xx ${status} (wrk: status ≥ 400), errors ${errors} (connect ${connect}, read ${readErrors}, write ${write}), timeouts ${timeout}`,
      generatorCpu: cpu * 1000 / wall
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Clock ticks a second, the unit of /proc/<pid>/stat's CPU times (`getconf CLK_TCK`), read once. */
let clockTicks: number | undefined
export function clockTicksPerSecond (): number {
  if (clockTicks === undefined) {
    const getconf = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })
    const ticks = Number(getconf.stdout.trim())
    if (getconf.status !== 0 || !Number.isInteger(ticks) || ticks <= 0) throw new Error(`getconf CLK_TCK answered ${JSON.stringify(getconf.stdout)}${getconf.stderr}`)
    clockTicks = ticks
  }
  return clockTicks
}

/**
 * The CPU time process `pid` has used so far, in clock ticks: utime and stime, fields 14 and 15
 * of /proc/<pid>/stat, which count every thread of the process (the main thread, libuv's thread
 * pool, V8's compiler and collector threads), ended threads included, and not its children.
 */
export function cpuTicks (pid: number): { user: number, system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself:
  // count from after the last ')', where field 3 begins.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { user: Number(fields[14 - 3]), system: Number(fields[15 - 3]) }
}

/** A server's CPU time over one measured run, per answered request, in µs. */
export interface ServerCpu {
  user: number
  system: number
  total: number
  /**
   * What one clock tick stands for in this run, in µs per request: /proc counts whole ticks, so
   * user and system are each known to about this much (the figure is the difference of two reads).
   */
  tick: number
}

export type Costed = Measured & { cpu: ServerCpu }

/**
 * `run`, one measured run against `server`, with the server's CPU time read from
 * /proc/<pid>/stat immediately before and after it and divided by the requests it answered
 * (2xx and 3xx, as the generator counted them). Called around the measured run alone: a warm-up,
 * or the requests a route makes between runs (PATCH refilling its If-Match pool), are not in it.
 *
 * Resolution: /proc counts whole clock ticks (10 ms at the usual CLK_TCK of 100), so a run's
 * user and system figures are each off by up to a tick over its requests. A full run's round of
 * 5 s answers some 10,000 requests at the slowest (the one-commit floor's writes, about 2,000 a
 * second) and up to 150,000 (the floor's reads): a tick is then 1 µs a request at most and 0.07
 * at least, against figures of 30 to several hundred µs, so about 1 % or less (`tick` says it
 * per run, and `npm run bench` warns where it is more). The smoke run's 100 requests make a tick
 * 100 µs a request: its figures show that the instrument works, no more.
 */
export async function withServerCpu (server: Server, run: () => Promise<Measured>): Promise<Costed> {
  const pid = server.process.pid!
  const before = cpuTicks(pid)
  const measured = await run()
  const after = cpuTicks(pid)
  // µs per request for one tick; NaN for a run with no answer (the run has failed anyway).
  const tick = measured.answered > 0 ? 1e6 / clockTicksPerSecond() / measured.answered : NaN
  const user = (after.user - before.user) * tick
  const system = (after.system - before.system) * tick
  return { ...measured, cpu: { user, system, total: user + system, tick } }
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** `npm run build`, which the measured runs start the service from (dist/, as `npm start` does). */
export function buildService (): void {
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) throw new Error('npm run build failed')
}

/**
 * The service on `databaseUrl`, started with `args` (`npm start`'s, scripts/start-command.mjs),
 * as every bench measures it: production settings, logs at info (to `logFile`), metrics on, and
 * the general rate limit on, far above what a bench sends from its one address in a minute.
 */
export async function startService (args: string[], databaseUrl: string, logFile: string, name = 'service'): Promise<Server> {
  const [port, metricsPort] = [await freePort(), await freePort()]
  return await startServer(name, args, {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
    METRICS_PORT: String(metricsPort)
  }, logFile, port)
}

/**
 * `args` (the service's, ending with its entry point) with bench/without-events/register.mjs
 * imported just before the entry, after any other --import (tsx): the same service with its event
 * recording taken out.
 */
export function withoutEvents (args: string[]): string[] {
  return [...args.slice(0, -1), '--import', join(ROOT, 'bench/without-events/register.mjs'), ...args.slice(-1)]
}

/** The floor (bench/floor.ts) on `databaseUrl`. */
export async function startFloor (databaseUrl: string, logFile: string, commit: 'each' | 'group' = 'each'): Promise<Server> {
  const port = await freePort()
  return await startServer(commit === 'each' ? 'floor' : 'group-floor', ['--import', 'tsx', join(ROOT, 'bench/floor.ts')],
    { FLOOR_DATABASE_URL: databaseUrl, FLOOR_PORT: String(port), FLOOR_COMMIT: commit }, logFile, port)
}

/** The peer (bench/peer.ts) on a SQLite `databaseUrl`, its log (stdout) to `logFile`. */
export async function startPeer (databaseUrl: string, logFile: string): Promise<Server> {
  const port = await freePort()
  return await startServer('peer', ['--import', 'tsx', join(ROOT, 'bench/peer.ts')], { PEER_DATABASE_URL: databaseUrl, PEER_PORT: String(port) }, logFile, port)
}
