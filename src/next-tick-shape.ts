import { createHook } from 'node:async_hooks'

// process.nextTick builds each queued tick as an object literal whose first keys are computed
// (two async-id symbols and the async context's), so V8 keeps the hidden classes it shapes them
// with only while some tick object still has them. When a full garbage collection runs with no
// tick queued (start-up does several; an idle server gets them from V8's memory reducer), those
// classes are freed and the next tick makes new ones. After a few such rounds the literal's
// inline caches have seen too many classes and turn megamorphic for the life of the process:
// every tick then builds its object in the runtime, about 350 ns instead of about 50, and a
// read answered over HTTP queues seven ticks in node:http and its streams (docs/PERFORMANCE.md,
// "Where a read's time goes"). Holding one tick object for the life of the process keeps its
// classes, so the caches stay monomorphic (test/server/next-tick-shape.test.ts).

let kept: object | undefined

/** Keeps one of process.nextTick's tick objects for the life of the process; at start-up, before anything else runs. */
export function keepNextTickShape (): void {
  if (kept !== undefined) return
  // The only way to reach a tick object is the init hook of async_hooks, enabled for this one tick.
  const hook = createHook({
    init (_id, type, _trigger, resource) {
      if (type === 'TickObject' && kept === undefined) kept = resource
    }
  }).enable()
  try {
    process.nextTick(noop)
  } finally {
    hook.disable()
  }
}

function noop (): void {}
