import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import sharp from 'sharp'
import { ImageProcess, inheritedFlags } from '../../src/files/image-process.js'
import { DEFAULT_IMAGE_LIMITS } from '../../src/files/image-processing.js'

// Image work in its own process: started by the first job, at nice 19; a process that dies
// while it holds a job refuses that job as unreadable (the service answers 415), and the next
// job starts a new process; closing ends it.

const folders: string[] = []
after(async () => { for (const folder of folders) await rm(folder, { recursive: true, force: true }) })

/** An upload's file and the folder its outputs go to. */
async function job (bytes: Buffer): Promise<{ input: string, output: string }> {
  const output = await mkdtemp(join(tmpdir(), 'image-process-'))
  folders.push(output)
  await writeFile(join(output, 'upload'), bytes)
  return { input: join(output, 'upload'), output }
}

/** This process's children running the image worker, with their nice value (/proc). */
function imageProcesses (): Array<{ pid: number, nice: number }> {
  const found = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[1]) !== process.pid) continue
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('image-worker')) continue
      found.push({ pid: Number(name), nice: Number(fields[16]) })
    } catch {
      // The process ended while it was read.
    }
  }
  return found
}

test('the flags a child inherits: loaders and memory, not the test runner\'s or a profiler\'s', () => {
  assert.deepEqual(inheritedFlags(['--import', './test/strip-types.mjs', '--test-reporter', 'spec', '--max-old-space-size=1024', '--cpu-prof', '--cpu-prof-dir=/tmp/p', '--test-timeout=5', '--experimental-test-coverage']),
    ['--import', './test/strip-types.mjs', '--max-old-space-size=1024'])
})

test('started by the first job at nice 19; a process killed while it holds a job refuses it as unreadable, the next job starts another; closing ends it', { skip: !existsSync('/proc/self/stat') ? 'no /proc' : false, timeout: 60_000 }, async () => {
  const errors: string[] = []
  const log = { error: (_details: unknown, message: string) => { errors.push(message) } } as unknown as FastifyBaseLogger
  const images = new ImageProcess(log)
  try {
    assert.deepEqual(imageProcesses(), [], 'none before the first job')
    const small = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#336699' } }).png().toBuffer()

    const first = await job(small)
    const made = await images.run(first.input, first.output, DEFAULT_IMAGE_LIMITS)
    assert.ok(!('refused' in made), JSON.stringify(made))
    assert.deepEqual([made.width, made.height], [300, 200])
    const [worker, ...others] = imageProcesses()
    assert.equal(others.length, 0)
    assert.equal(worker!.nice, 19, 'the image process runs at the lowest priority')

    // The job is sent before run() first awaits: killing the process now kills it holding the job.
    const second = await job(small)
    const held = images.run(second.input, second.output, DEFAULT_IMAGE_LIMITS)
    process.kill(worker!.pid, 'SIGKILL')
    assert.deepEqual(await held, { refused: 'undecodable' })
    assert.deepEqual(errors, ['the image process ended while it held images'])

    const third = await job(small)
    const again = await images.run(third.input, third.output, DEFAULT_IMAGE_LIMITS)
    assert.ok(!('refused' in again), JSON.stringify(again))
    const [next] = imageProcesses()
    assert.ok(next !== undefined && next.pid !== worker!.pid, 'a new process')
  } finally {
    await images.close()
  }
  assert.deepEqual(imageProcesses(), [], 'none after close')
  await assert.rejects(images.run('x', 'y', DEFAULT_IMAGE_LIMITS), /closed/)
})
