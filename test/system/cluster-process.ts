import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { freePort } from '../../scripts/free-port.mjs'
import { waitFor } from './load.js'
import { clusterBuildFlag } from '../service-command.js'

// `npm run cluster` as the system tests start it (without a build of its own: see
// test/service-command.ts): three instances
// behind HAProxy on a free loopback port, an admin, the limits out of the way, webhooks allowed
// to loopback with short retries. Its output is collected, for the pids and exits it reports.

export interface ClusterProcess {
  child: ChildProcess
  /** The balancer's address. */
  base: string
  /** The instances' pids, in the order it started them. */
  pids: number[]
  /** Everything it printed so far, both streams. */
  output: () => string
  /** SIGTERM, if it still runs, and its exit code. */
  stop: () => Promise<number | null>
}

export const ADMIN = { email: 'root@example.com', password: 'root password' }

export async function startCluster (env: Record<string, string>): Promise<ClusterProcess> {
  const child = spawn(process.execPath, ['scripts/cluster.mjs', clusterBuildFlag], {
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '',
      PORT: String(await freePort()), INSTANCES: '3', LOG_LEVEL: 'warn',
      ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SIGNUPS_PER_CLIENT_PER_HOUR: '1000000', RATE_LIMIT_PER_MINUTE: '0',
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.5,1,1,1,1,1', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_POLL_MS: '200',
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const ready = /\[cluster\] ready: (http:\S+)/
  await waitFor('the cluster is ready', async () => {
    if (child.exitCode !== null) throw new Error(`cluster exited ${child.exitCode}: ${output}`)
    return ready.test(output)
  }, 90_000)
  return {
    child,
    base: ready.exec(output)![1]!,
    pids: [...output.matchAll(/instance \d+: pid (\d+)/g)].map((m) => Number(m[1])),
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill('SIGTERM')
      const [code] = await once(child, 'exit') as [number | null]
      return code
    }
  }
}
