import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { SlotsFull, WorkSlots } from '../../src/background/work-slots.js'
import { gate } from '../helper.js'

describe('work slots', { timeout: 10_000 }, () => {
  test('two run at once, one waits, the next is refused without running; slots pass in arrival order', async () => {
    const slots = new WorkSlots(2, 1)
    const order: string[] = []
    const gates = [gate(), gate(), gate()]
    const job = (name: string, g: ReturnType<typeof gate>) => async () => { order.push(`${name} started`); await g.opened; order.push(`${name} ended`); return name }
    const a = slots.run(job('a', gates[0]!))
    const b = slots.run(job('b', gates[1]!))
    const c = slots.run(job('c', gates[2]!))
    await assert.rejects(slots.run(async () => { order.push('d started'); return 'd' }), SlotsFull)
    assert.deepEqual(slots.load, { running: 2, waiting: 1 })
    gates[1]!.open()
    assert.equal(await b, 'b')
    gates[2]!.open()
    assert.equal(await c, 'c')
    gates[0]!.open()
    assert.equal(await a, 'a')
    assert.deepEqual(order, ['a started', 'b started', 'b ended', 'c started', 'c ended', 'a ended'])
    assert.deepEqual(slots.load, { running: 0, waiting: 0 })
  })

  test('a job that fails frees its slot', async () => {
    const slots = new WorkSlots(1, 0)
    await assert.rejects(slots.run(async () => { throw new Error('no') }), /no/)
    assert.equal(await slots.run(async () => 'next'), 'next')
  })
})
