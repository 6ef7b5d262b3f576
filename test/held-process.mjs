// The end of a test process that something still holds (a server, a socket, a child process or
// a timer left open): the files it ran, what happened, and what holds it on stderr, then the
// exit. Shared by test/lingering.mjs (a file's own process) and scripts/test-pass.mjs (a group's
// process). Plain JavaScript, so that it needs no compiling.
import process from 'node:process'

/** How long a process may stay idle after its tests (TEST_LINGER_LIMIT_MS, 2 minutes by default). */
export const LINGER_LIMIT_MS = Number(process.env.TEST_LINGER_LIMIT_MS ?? 120_000)

/** Names `files` (or the script) and what holds the process after `what`, then exits with `code`. */
export function endHeldProcess (files, what, code) {
  const held = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap')
  process.stderr.write(`${files.length > 0 ? files.join(', ') : process.argv[1]}: ${what}, but its process still runs, held by: ${held.join(', ')}\n`)
  process.exit(code)
}
