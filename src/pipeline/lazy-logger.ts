import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger } from 'pino'

// request.log without a pino child per request. Fastify makes `request.log` for every request, a
// child of the server's logger bound to the request id; making one (its bindings serialized)
// cost about a microsecond, and nearly every request never uses it: the access line is written
// without it (pipeline/request-log.ts). This child is made of nothing until a line is logged through
// it (an error, a warning, a debug line), and then it is pino's own child, with the same bindings.

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

class LazyChild {
  readonly #parent: Logger
  readonly #bindings: Bindings
  readonly #options: ChildLoggerOptions
  #real: Logger | undefined

  constructor (parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  get #child (): Logger {
    this.#real ??= this.#parent.child(this.#bindings, this.#options)
    return this.#real
  }

  get level (): string { return this.#real?.level ?? this.#options.level ?? this.#parent.level }
  set level (level: string) { this.#child.level = level }

  #log (level: Level, args: unknown[]): void {
    if (this.#real === undefined && !this.#parent.isLevelEnabled(level)) return
    (this.#child[level] as (...a: unknown[]) => void)(...args)
  }

  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}
  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger { return this.#child.child(bindings, options) }
  isLevelEnabled (level: string): boolean { return this.#real?.isLevelEnabled(level) ?? this.#parent.isLevelEnabled(level) }
}

/** Fastify's childLoggerFactory: a request's logger that becomes pino's child on first use. */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = function (logger, bindings, options) {
  // Not pino (Fastify's logger when logging is off, a test's own): its own child, at once.
  if (typeof (logger as Partial<Logger>).isLevelEnabled !== 'function') return logger.child(bindings, options)
  return new LazyChild(logger as unknown as Logger, bindings, options) as unknown as FastifyBaseLogger
}
