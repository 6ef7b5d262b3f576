// The part of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | undefined
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void
    }
    interface Options {
      url: string
      connections?: number
      duration?: number
      amount?: number
      requests?: Request[]
    }
    interface Histogram { p50: number, p99: number, average: number, total: number }
    interface Result {
      start: Date
      finish: Date
      requests: Histogram
      latency: Histogram
      non2xx: number
      '2xx': number
      '3xx': number
      errors: number
      timeouts: number
      statusCodeStats: Record<string, { count: number }>
    }
  }
  function autocannon (options: autocannon.Options, done: (error: Error | null | undefined, result: autocannon.Result) => void): { stop: () => void }
  export default autocannon
}
