import fc from 'fast-check'

// Creation times and the `createdAfter`/`createdBefore` bounds of the property walks over lists
// (orders, posts). Not a test file.

/** A few instants a second apart, so that creation times tie. */
export const instant = (second: number) => new Date(Date.UTC(2026, 10, 25, 10, 0, second)).toISOString()

/**
 * A bound at one of those instants, half a millisecond after it or before it, in UTC or two hours
 * ahead: its text for the query and the instant it stands for.
 */
export const timeBound = fc.tuple(fc.integer({ min: 0, max: 5 }), fc.constantFrom(0, 0.0005, -0.0005), fc.boolean()).map(([second, shift, ahead]) => {
  const base = Date.parse(instant(second))
  // `….000Z`, `….0005Z`, or the millisecond before with `5` after it: `…02.9995Z`.
  const utc = shift === 0 ? instant(second) : shift > 0 ? instant(second).replace('.000Z', '.0005Z') : new Date(base - 1).toISOString().replace('Z', '5Z')
  const text = ahead ? utc.replace(/T(\d\d)/, (_, hour: string) => `T${String(Number(hour) + 2).padStart(2, '0')}`).replace('Z', '+02:00') : utc
  return { text, ms: base + shift }
})
