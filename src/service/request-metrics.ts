// The count and latency of answered requests, per method, route pattern and status, in the
// Prometheus text format: `http_requests_total` (a counter) and `http_request_duration_seconds`
// (a histogram), exactly as prom-client's Counter and Histogram would render them.
//
// Why not those two classes: every `inc` and `observe` validates the label names, builds a
// string key from the label values and looks the series up by it, even through `labels()`.
// That cost 2.2–3.2 µs a request here, and taking it out saved about 5% of the instructions of a
// cached read (docs/decisions.md, Performance). Here a series is found by its route and then
// among that route's few, and counted in place. prom-client still collects the process metrics;
// the listener puts these two after them.

/** Upper bounds of the latency buckets, in seconds (prom-client's defaults without the 10 s one). */
export const DURATION_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const

interface Series {
  method: string
  statusCode: number
  /** `method="GET",route="/v1/posts/:id",status_code="200"`, escaped once. */
  labels: string
  count: number
  sum: number
  /** Requests per bucket, not cumulative: slot i counts latencies in (bound i−1, bound i]; the last slot, those above every bound. */
  buckets: number[]
}

// A label value's escapes in the text format: backslash, double quote and line feed.
const labelValue = (value: string): string => value.replace(/[\\"\n]/g, (c) => c === '\n' ? '\\n' : `\\${c}`)

export class RequestMetrics {
  // The set of series is bounded: the route table times the methods and statuses the API answers.
  // Found by route (its pattern, the same string every time) and then among that route's few
  // series: a key written per request cost a new string, its hash and a comparison of its text
  // in V8's runtime on every lookup.
  readonly #byRoute = new Map<string, Series[]>()
  /** Every series, in the order they were first counted (the exposition's order). */
  readonly #series: Series[] = []

  record (method: string, route: string, statusCode: number, seconds: number): void {
    let ofRoute = this.#byRoute.get(route)
    if (ofRoute === undefined) {
      ofRoute = []
      this.#byRoute.set(route, ofRoute)
    }
    let series: Series | undefined
    for (const each of ofRoute) {
      if (each.statusCode === statusCode && each.method === method) {
        series = each
        break
      }
    }
    if (series === undefined) {
      series = {
        method,
        statusCode,
        labels: `method="${labelValue(method)}",route="${labelValue(route)}",status_code="${statusCode}"`,
        count: 0,
        sum: 0,
        buckets: new Array<number>(DURATION_BOUNDS.length + 1).fill(0)
      }
      ofRoute.push(series)
      this.#series.push(series)
    }
    series.count += 1
    series.sum += seconds
    let slot = 0
    while (slot < DURATION_BOUNDS.length && seconds > DURATION_BOUNDS[slot]!) slot += 1
    series.buckets[slot]! += 1
  }

  /** Both metrics in the text format, each with its HELP and TYPE lines, ending in a line feed. */
  exposition (): string {
    const counter = ['# HELP http_requests_total HTTP requests answered.', '# TYPE http_requests_total counter']
    const histogram = ['# HELP http_request_duration_seconds Time to answer an HTTP request.', '# TYPE http_request_duration_seconds histogram']
    for (const { labels, count, sum, buckets } of this.#series) {
      counter.push(`http_requests_total{${labels}} ${count}`)
      let cumulative = 0
      DURATION_BOUNDS.forEach((bound, slot) => {
        cumulative += buckets[slot]!
        histogram.push(`http_request_duration_seconds_bucket{le="${bound}",${labels}} ${cumulative}`)
      })
      histogram.push(
        `http_request_duration_seconds_bucket{le="+Inf",${labels}} ${count}`,
        `http_request_duration_seconds_sum{${labels}} ${sum}`,
        `http_request_duration_seconds_count{${labels}} ${count}`
      )
    }
    return `${counter.join('\n')}\n\n${histogram.join('\n')}\n`
  }
}
