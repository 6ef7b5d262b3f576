// `npm run bench:start-up`: how long the built service takes, from process start to a 200 on
// /health/ready, on an existing SQLite database, the CPU time it used by then (user and system,
// from /proc: on a shared machine the wall time grows with the others' load, this much less),
// and its peak resident memory by then (VmHWM).
// The service is started as `npm start` starts it (its Node.js flags, dist/server.js), with the
// defaults an operator gets (metrics listener on, log at info, to /dev/null here). The first run
// migrates the fresh database and is not counted; then START_RUNS runs (default 7), each
// stopped with SIGTERM before the next. Prints every run and the median.
//
//   npm run build && npm run bench:start-up
//   START_RUNS=15 npm run bench:start-up
//   START_CPU_PROF=/tmp/prof npm run bench:start-up   # each counted run under --cpu-prof
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { freePort } from '../scripts/free-port.mjs'
import { serviceArguments } from '../scripts/start-command.mjs'
import { clockTicksPerSecond, cpuTicks, median } from './load.js'

const RUNS = Number(process.env.START_RUNS ?? 7)
const PROFILE = process.env.START_CPU_PROF

interface Run { readyMs: number, cpuMs: number, peakMiB: number }

async function startOnce (databaseUrl: string, profile: boolean): Promise<Run> {
  const port = await freePort()
  const flags = profile && PROFILE !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []
  const started = performance.now()
  const child = spawn(process.execPath, [...flags, ...serviceArguments()], {
    env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: databaseUrl, PORT: String(port), METRICS_PORT: String(await freePort()), SHUTDOWN_GRACE_MS: '0' },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const exited = once(child, 'exit')
  try {
    // Asked every 5 ms: a refused connection costs microseconds, so the figure is the service's.
    for (;;) {
      const status = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(2000) }).then((res) => res.status, () => 0)
      if (status === 200) break
      if (child.exitCode !== null) throw new Error(`the service exited ${child.exitCode} before it was ready`)
      if (performance.now() - started > 60_000) throw new Error('not ready within 60 s')
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const readyMs = performance.now() - started
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
    const cpu = cpuTicks(child.pid!)
    return { readyMs, cpuMs: (cpu.user + cpu.system) * 1000 / clockTicksPerSecond(), peakMiB: Number(hwm?.[1] ?? 0) / 1024 }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}


const dir = mkdtempSync(join(tmpdir(), 'start-up-'))
try {
  const databaseUrl = `file:${join(dir, 'api.db')}`
  await startOnce(databaseUrl, false)
  const runs: Run[] = []
  for (let i = 0; i < RUNS; i++) {
    const run = await startOnce(databaseUrl, true)
    runs.push(run)
    console.log(`run ${i + 1}: ready after ${run.readyMs.toFixed(0)} ms, ${run.cpuMs.toFixed(0)} ms of CPU, peak RSS ${run.peakMiB.toFixed(1)} MiB`)
  }
  const ready = runs.map((r) => r.readyMs); const cpu = runs.map((r) => r.cpuMs); const peak = runs.map((r) => r.peakMiB)
  console.log(`\n${RUNS} runs, node ${process.version}: ready median ${median(ready).toFixed(0)} ms (${Math.min(...ready).toFixed(0)}–${Math.max(...ready).toFixed(0)}), ` +
    `CPU median ${median(cpu).toFixed(0)} ms (${Math.min(...cpu).toFixed(0)}–${Math.max(...cpu).toFixed(0)}), ` +
    `peak RSS median ${median(peak).toFixed(1)} MiB (${Math.min(...peak).toFixed(1)}–${Math.max(...peak).toFixed(1)})`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
