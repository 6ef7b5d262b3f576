import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CoalescedTask } from '../../src/events/coalesced-task.js'

test('a coalesced task: asked for during a run, it runs once more after it, however often it was asked; a failed run is reported and the next still runs', async () => {
  let runs = 0
  let release: () => void = () => {}
  const errors: unknown[] = []
  const task = new CoalescedTask(async () => {
    runs += 1
    await new Promise<void>((resolve) => { release = resolve })
    if (runs === 1) throw new Error('first run fails')
  }, (error) => { errors.push(error) })
  const ask = (): void => { if (!task.busy()) task.start(ask) }
  ask()
  assert.equal(runs, 1)
  assert.equal(task.running, true)
  ask(); ask(); ask()
  assert.equal(runs, 1)
  release()
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(runs, 2)
  assert.deepEqual(errors.map((e) => (e as Error).message), ['first run fails'])
  release()
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(runs, 2)
  assert.equal(task.running, false)
})
