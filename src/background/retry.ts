// When a failed attempt is tried again: the schedule's delay for the attempt that comes next
// (WEBHOOK_RETRY_SCHEDULE, MAIL_RETRY_SCHEDULE), spread by ±10 % so that items that failed
// together do not all come back together, and never sooner than the receiver asked
// (Retry-After). Past the schedule's end the item is given up.

const JITTER = 0.1

/** The time of the next attempt after `attempts` attempts, or undefined to give up. */
export function nextAttemptAt (scheduleMs: readonly number[], attempts: number, now: Date, retryAfterSeconds = 0): Date | undefined {
  if (attempts >= scheduleMs.length) return undefined
  const scheduled = scheduleMs[attempts]! * (1 + JITTER * (2 * Math.random() - 1))
  return new Date(now.getTime() + Math.max(scheduled, retryAfterSeconds * 1000))
}
