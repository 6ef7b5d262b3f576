// Processes and load for `npm run bench` and `npm run bench:ceiling`: start the service (as
// `npm start` does), the floor or the peer on a loopback port, pinned to one core when taskset
// exists; wait until it answers; sample its memory; run autocannon against it from this process
// (pinned to the other core), and measure what that costs this process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { cpus } from 'node:os'
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
  /** Highest resident set size seen by sample() since the last reset, in MiB. */
  peakRss: () => number
  resetPeak: () => void
  /** The kernel's high-water mark of resident memory for the whole life of the process, in MiB. */
  highWater: () => number
  stop: () => Promise<void>
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
  let peak = 0
  const sampler = setInterval(() => { peak = Math.max(peak, status(child.pid!, 'VmRSS')) }, 200)
  return {
    name,
    url,
    process: child,
    peakRss: () => Math.max(peak, status(child.pid!, 'VmRSS')),
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
  /** Responses outside 2xx, errors and timeouts: a measurement with any is not one. */
  bad: number
  badDetail: string
  /**
   * CPU time of this process (the load generator) over the run, as a share of one core. Near 1,
   * the generator, not the server, may have set the pace.
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
export async function startService (args: string[], databaseUrl: string, logFile: string): Promise<Server> {
  const [port, metricsPort] = [await freePort(), await freePort()]
  return await startServer('service', args, {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
    METRICS_PORT: String(metricsPort)
  }, logFile, port)
}

/** The floor (bench/floor.ts) on `databaseUrl`. */
export async function startFloor (databaseUrl: string, logFile: string): Promise<Server> {
  const port = await freePort()
  return await startServer('floor', ['--import', 'tsx', join(ROOT, 'bench/floor.ts')], { FLOOR_DATABASE_URL: databaseUrl, FLOOR_PORT: String(port) }, logFile, port)
}

/** The peer (bench/peer.ts) on a SQLite `databaseUrl`, its log (stdout) to `logFile`. */
export async function startPeer (databaseUrl: string, logFile: string): Promise<Server> {
  const port = await freePort()
  return await startServer('peer', ['--import', 'tsx', join(ROOT, 'bench/peer.ts')], { PEER_DATABASE_URL: databaseUrl, PEER_PORT: String(port) }, logFile, port)
}
