import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { QUIET_LIMITS } from '../helper.js'
import { serverArguments } from '../service-command.js'

// Runs src/server.ts as a real process (as `npm start` does after building, with its Node.js
// flags), for what only a process shows: start-up, configuration errors, signals and exit codes.
// The limits and the metrics listener are set as for in-process tests (QUIET_LIMITS), unless a
// test says otherwise.

export interface ServerProcess {
  child: ChildProcessWithoutNullStreams
  stdout: () => string
  stderr: () => string
  /** Resolves with the base URL once the server logs that it listens. */
  listening: () => Promise<string>
  exit: () => Promise<number | null>
  /** Resolves once the server's log (stdout) matches. */
  logged: (pattern: RegExp) => Promise<void>
}

export function startServer (env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, serverArguments(), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...QUIET_LIMITS, LOG_LEVEL: 'info', ...env }
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const exited = once(child, 'exit').then(([code]) => code as number | null)
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    // Waits on what the server prints (or its exit), for at most 30 s.
    listening: async () => {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, 30_000) })
      try {
        for (;;) {
          const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
          if (match !== null) return match[1]!
          if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited ${child.exitCode ?? child.signalCode}: ${err}${out}`)
          if (await Promise.race([once(child.stdout, 'data').then(() => false), exited.then(() => false), late.then(() => true)])) {
            throw new Error(`server did not start within 30 s: ${err}${out}`)
          }
        }
      } finally {
        clearTimeout(timer)
      }
    },
    exit: async () => await exited,
    logged: async (pattern) => {
      while (!pattern.test(out)) {
        if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode} before logging ${pattern}`)
        await once(child.stdout, 'data')
      }
    }
  }
}
