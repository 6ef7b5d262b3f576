import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
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

/** The nice value of a running process, or undefined once it has ended (/proc). */
function niceOf (pid: number): number | undefined {
  try {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[0] === 'Z' ? undefined : Number(fields[16])
  } catch {
    return undefined
  }
}

/** Whether the process runs the image worker (its command line names it). */
const runsWorker = (pid: number): boolean => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('image-worker')

test('the flags a child inherits: loaders and memory, not the test runner\'s or a profiler\'s', () => {
  assert.deepEqual(inheritedFlags(['--import', './test/strip-types.mjs', '--test-reporter', 'spec', '--max-old-space-size=1024', '--cpu-prof', '--cpu-prof-dir=/tmp/p', '--test-timeout=5', '--experimental-test-coverage']),
    ['--import', './test/strip-types.mjs', '--max-old-space-size=1024'])
})

test('started by the first job at nice 19; a process killed while it holds a job refuses it as unreadable, the next job starts another; closing ends it', { skip: !existsSync('/proc/self/stat') ? 'no /proc' : false, timeout: 60_000 }, async () => {
  const errors: string[] = []
  const log = { error: (_details: unknown, message: string) => { errors.push(message) } } as unknown as FastifyBaseLogger
  const images = new ImageProcess(log)
  // Other files' apps may run image processes of their own in this process (files share one):
  // only this instance's process is looked at, by its id.
  let first: number | undefined
  let second: number | undefined
  try {
    assert.equal(images.pid, undefined, 'none before the first job')
    const small = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#336699' } }).png().toBuffer()

    const one = await job(small)
    const made = await images.run(one.input, one.output, DEFAULT_IMAGE_LIMITS)
    assert.ok(!('refused' in made), JSON.stringify(made))
    assert.deepEqual([made.width, made.height], [300, 200])
    first = images.pid
    assert.ok(first !== undefined && runsWorker(first), 'the image worker runs')
    assert.equal(niceOf(first), 19, 'the image process runs at the lowest priority')

    // The job is sent before run() first awaits: killing the process now kills it holding the job.
    const two = await job(small)
    const held = images.run(two.input, two.output, DEFAULT_IMAGE_LIMITS)
    process.kill(first, 'SIGKILL')
    assert.deepEqual(await held, { refused: 'undecodable' })
    assert.deepEqual(errors, ['the image process ended while it held images'])
    assert.equal(niceOf(first), undefined, 'the killed process is gone')

    const three = await job(small)
    const again = await images.run(three.input, three.output, DEFAULT_IMAGE_LIMITS)
    assert.ok(!('refused' in again), JSON.stringify(again))
    second = images.pid
    assert.ok(second !== undefined && second !== first && runsWorker(second), 'a new process')
  } finally {
    await images.close()
  }
  assert.equal(niceOf(second!), undefined, 'none after close')
  await assert.rejects(images.run('x', 'y', DEFAULT_IMAGE_LIMITS), /closed/)
})
