// A bounded load for the system tests: a fixed number of workers, each repeating one step
// until stopped, every outcome recorded (status, or how the connection failed).

export interface Outcome {
  op: string
  /** HTTP status, or how the request failed without one. */
  status: number | 'reset' | 'refused' | 'failed'
  started: number
  ended: number
  retryAfter?: string | null
  connection?: string | null
  /** What a write created, when it was acknowledged. */
  created?: string
}

export function failureKind (error: unknown): Outcome['status'] {
  const cause = (error as { cause?: { code?: string } }).cause
  const code = cause?.code ?? (error as { code?: string }).code
  if (code === 'ECONNREFUSED') return 'refused'
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'reset'
  return 'failed'
}

/** One request, its outcome recorded; never throws. */
export async function attempt (op: string, url: string, init: RequestInit = {}, created?: (body: any) => string): Promise<Outcome> {
  const started = Date.now()
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) })
    const text = await res.text()
    const outcome: Outcome = { op, status: res.status, started, ended: Date.now(), retryAfter: res.headers.get('retry-after'), connection: res.headers.get('connection') }
    if (created !== undefined && res.status >= 200 && res.status < 300) outcome.created = created(JSON.parse(text))
    return outcome
  } catch (error) {
    return { op, status: failureKind(error), started, ended: Date.now() }
  }
}

export interface Load {
  outcomes: Outcome[]
  stop: () => Promise<Outcome[]>
}

export function startLoad (workers: number, step: (worker: number, round: number) => Promise<Outcome>): Load {
  const outcomes: Outcome[] = []
  let running = true
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let round = 0; running; round++) {
      const outcome = await step(worker, round)
      outcomes.push(outcome)
      // A refused connection returns at once; do not spin.
      if (typeof outcome.status !== 'number') await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })
  return {
    outcomes,
    stop: async () => {
      running = false
      await Promise.all(loops)
      return outcomes
    }
  }
}

export function count (outcomes: Outcome[], predicate: (o: Outcome) => boolean): number {
  return outcomes.filter(predicate).length
}

export async function waitFor (what: string, check: () => Promise<boolean>, limitMs: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`${what}: not within ${limitMs} ms`)
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit =>
  ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
