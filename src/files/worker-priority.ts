import { readdirSync, readFileSync } from 'node:fs'
import { setPriority } from 'node:os'

// Image work runs on libuv's thread pool (and libvips' own threads), which share the machine's
// cores with the event loop. On a busy machine the work would take the loop's turns and every
// request would wait behind a decoder: on one core, a read's p99 went from 1 ms to 20 ms during a
// burst of uploads. So the pool's threads run at a lower priority (nice 10): the event loop goes
// first, and the images take whatever the requests leave. On Linux a thread's priority is its
// own (setpriority with its thread id); elsewhere this does nothing. What else runs on the pool
// (password hashes, file reads) is lowered too, which only matters when the cores are all busy,
// and then the requests waiting on the loop are the ones to serve first.

const NICE = 10
const lowered = new Set<string>()

/** Lowers the priority of the process's pool threads not lowered yet (new ones appear as the pool grows). */
export function lowerWorkerPriority (): void {
  let tasks: string[]
  try {
    tasks = readdirSync('/proc/self/task')
  } catch {
    return
  }
  for (const tid of tasks) {
    if (lowered.has(tid)) continue
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
      if (name === 'libuv-worker' || name.startsWith('vips')) setPriority(Number(tid), NICE)
      lowered.add(tid)
    } catch {
      // The thread ended meanwhile, or the system has no such control: nothing to lower.
    }
  }
}
