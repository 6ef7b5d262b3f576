// Loaded into every test file's process by `npm test` (scripts/test.mjs, --import): a file whose
// tests and hooks have all ended but whose process still runs (a server, a socket, a child
// process or a timer left behind, by a test that timed out or by one that forgot to close what
// it opened) fails, naming what holds it, instead of holding the whole run.
//
// The runner used to end such a process itself (--test-force-exit), but that flag can drop the
// last events of a file run beside others (--test-concurrency above 1), so that a test's verdict
// went missing from the totals. Here the process ends only once it has been idle that long, its
// events long written. Plain JavaScript, so that it needs no compiling.
import { after } from 'node:test'
import { setTimeout } from 'node:timers'
import { endHeldProcess, LINGER_LIMIT_MS } from './held-process.mjs'

// Registered first, so it runs before the file's own top-level `after` hooks: the limit covers
// them as well as the wait, and each of them is bounded by the pass's time limit anyway.
after(() => {
  const timer = setTimeout(() => {
    // The test file, or the files a group ran in this process (scripts/test-pass.mjs).
    endHeldProcess(process.argv.slice(1).filter((arg) => arg.endsWith('.test.ts')), `its tests ended ${LINGER_LIMIT_MS / 1000} s ago`, 1)
  }, LINGER_LIMIT_MS)
  // Never what keeps the process alive: a file that has let go of everything exits at once.
  timer.unref()
})
