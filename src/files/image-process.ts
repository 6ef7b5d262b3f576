import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { setPriority } from 'node:os'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyBaseLogger } from 'fastify'
import type { ImageLimits, ImageRefusal, ProcessedImage } from './image-processing.js'

// Image work in a process of its own, at the lowest priority (nice 19). libvips decodes on
// threads that, in the service's process, shared the cores with the event loop and with the
// thread pool's other work (password hashes, file reads): a read waited behind a decoder for a
// time slice, and lowering the pool's threads lowered the hashes too. A process of its own is
// scheduled after every request of the service, and a decoder that crashes on a hostile file
// takes only that process down: the upload is refused, the next one starts a new process.
//
// Started by the first upload (sharp and libvips load there, not in every instance that never
// sees an image); jobs are files in and files out (image-processing.ts), the outcome by IPC.

const HERE = fileURLToPath(import.meta.url)
/** The worker beside this file: image-worker.js when built, image-worker.ts from the sources. */
const ENTRY = join(dirname(HERE), `image-worker${extname(HERE)}`)
const NICE = 19

/** The flags a child may inherit: module loaders and memory, not a test runner's or a profiler's. */
export function inheritedFlags (flags: readonly string[]): string[] {
  const kept: string[] = []
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!
    if (/^--(test|experimental-test|watch|inspect|cpu-prof|heap-prof|prof)/.test(flag)) {
      // A value given apart (`--test-reporter spec`) goes with its flag.
      if (!flag.includes('=') && flags[i + 1] !== undefined && !flags[i + 1]!.startsWith('-')) i++
      continue
    }
    kept.push(flag)
  }
  return kept
}

interface Pending { resolve: (outcome: ProcessedImage | ImageRefusal) => void, reject: (error: Error) => void }
type Reply = { id: number, result: ProcessedImage | ImageRefusal } | { id: number, error: string }

export class ImageProcess {
  readonly #log: FastifyBaseLogger
  #child: ChildProcess | undefined
  readonly #pending = new Map<number, Pending>()
  #next = 1
  #closed = false

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  /** The image process's id while it runs (it starts with the first job). */
  get pid (): number | undefined {
    return this.#child?.pid
  }

  /** Makes the stored original and variants of `input` in `output` (processImage, in the image process). */
  async run (input: string, output: string, limits: ImageLimits): Promise<ProcessedImage | ImageRefusal> {
    if (this.#closed) throw new Error('the image process is closed')
    const child = this.#child ?? this.#start()
    const id = this.#next++
    const outcome = new Promise<ProcessedImage | ImageRefusal>((resolve, reject) => { this.#pending.set(id, { resolve, reject }) })
    // Held while a job is out (nothing else may keep a test's process alive); let go when idle.
    if (this.#pending.size === 1) { child.ref(); child.channel?.ref() }
    child.send({ id, input, output, limits })
    return await outcome
  }

  #start (): ChildProcess {
    const child = fork(ENTRY, [], { execArgv: inheritedFlags(process.execArgv), stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' })
    this.#child = child
    try {
      setPriority(child.pid!, NICE)
    } catch {
      // A system without the control: the process runs at the service's priority.
    }
    child.on('message', (reply: Reply) => {
      const job = this.#pending.get(reply.id)
      if (job === undefined) return
      this.#settled(reply.id)
      if ('error' in reply) job.reject(new Error(reply.error))
      else job.resolve(reply.result)
    })
    child.on('exit', (code, signal) => {
      if (this.#child === child) this.#child = undefined
      if (this.#pending.size > 0) {
        // The decoder crashed (a hostile or broken file, most likely) or the process was killed:
        // the images it held are refused as unreadable; the next upload starts a new process.
        this.#log.error({ code, signal, jobs: this.#pending.size }, 'the image process ended while it held images')
        for (const [id, job] of this.#pending) { this.#pending.delete(id); job.resolve({ refused: 'undecodable' }) }
      }
    })
    child.unref()
    child.channel?.unref()
    return child
  }

  #settled (id: number): void {
    this.#pending.delete(id)
    if (this.#pending.size === 0) { this.#child?.unref(); this.#child?.channel?.unref() }
  }

  /** Ends the image process (after the jobs it holds, which the service's drain has let finish). */
  async close (): Promise<void> {
    this.#closed = true
    const child = this.#child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.ref()
    child.disconnect()
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 5000)
    await exited
    clearTimeout(timer)
  }
}
