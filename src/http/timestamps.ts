// RFC 3339 timestamps in query parameters (`createdAfter=2026-11-25T10:00:00Z`): a date, `T`, a
// time with an optional fraction, and `Z` or an offset. Checked field by field, since
// Date.parse takes 30 February as 2 March. Stored times have millisecond precision, so an
// instant is kept as milliseconds and whether it had a finer fraction, which decides the
// millisecond a bound excludes (see the listings that use it).

const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/

export interface Instant {
  /** Milliseconds since the epoch, the fraction below a millisecond cut off. */
  ms: number
  /** The fraction below the millisecond, in nanoseconds (0 to 999,999). */
  finer: number
}

/** Negative, zero or positive as `a` is before, at or after `b`. */
export function compareInstants (a: Instant, b: Instant): number {
  return a.ms - b.ms || a.finer - b.finer
}

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

export function parseTimestamp (text: string): Instant | undefined {
  const m = RFC_3339.exec(text)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined
  if (day < 1 || day > (month === 2 && isLeap(year) ? 29 : DAYS[month - 1]!)) return undefined
  const offsetHours = m[9] === undefined ? 0 : Number(m[9])
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10])
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const fraction = (m[7] ?? '').padEnd(9, '0')
  // setUTCFullYear, not Date.UTC, which reads the years 0–99 as 1900–1999.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3)))
  const ms = date.getTime() - (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  // In UTC still a four-digit year, so that its stored form compares as text on SQLite.
  const utcYear = new Date(ms).getUTCFullYear()
  if (utcYear < 0 || utcYear > 9999) return undefined
  return { ms, finer: Number(fraction.slice(3)) }
}

/**
 * The stored form (ISO 8601 in UTC with milliseconds, what nowIso() writes) of the last
 * millisecond at or before the instant, and of the first one at or after it: a row's time is
 * after the instant when it is after the first, and before it when it is before the second.
 */
export function millisecondBounds (instant: Instant): { floor: string, ceiling: string } {
  return { floor: new Date(instant.ms).toISOString(), ceiling: new Date(instant.ms + (instant.finer > 0 ? 1 : 0)).toISOString() }
}
