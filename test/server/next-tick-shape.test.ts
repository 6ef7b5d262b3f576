import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { test } from 'node:test'

// What src/next-tick-shape.ts is for, seen in V8's own account of process.nextTick's inline
// caches (%DebugPrint of the function lists each feedback slot and its state): a process that
// runs a few full garbage collections with no tick queued, as start-up and an idle server do.
// Kept, the caches of the tick object's literal stay monomorphic; not kept, they turn
// megamorphic. The second test is the reason for the first: should a Node.js release stop
// losing the tick object's classes, it fails, and the module can go.

/** The states of nextTick's object-literal caches after eight rounds of ticks and full collections, in a new process. */
function literalCacheStates (keep: boolean): string[] {
  const program = `
    ${keep ? "const { keepNextTickShape } = await import('./src/next-tick-shape.ts'); keepNextTickShape()" : ''}
    const noop = () => {}
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 100; i++) process.nextTick(noop)
      await new Promise((resolve) => setImmediate(resolve))
      globalThis.gc()
    }
    eval('%DebugPrint(process.nextTick)')`
  const printed = execFileSync(process.execPath, ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', program], { encoding: 'utf8', timeout: 30_000 })
  return [...printed.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map(([, state]) => state!)
}

test('with one tick object kept, the tick literal\'s caches stay monomorphic through full collections', { timeout: 60_000 }, () => {
  const states = literalCacheStates(true)
  assert.ok(states.length >= 2, `nextTick's literal caches not found in V8's print: ${states.join(', ')}`)
  assert.deepEqual(states.filter((state) => state !== 'MONOMORPHIC'), [])
})

test('without it they turn megamorphic (the reason for keeping one)', { timeout: 60_000 }, () => {
  const states = literalCacheStates(false)
  assert.ok(states.includes('MEGAMORPHIC'), `this Node.js keeps the tick object's classes by itself (${states.join(', ')}): src/next-tick-shape.ts can go`)
})
