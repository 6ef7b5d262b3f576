/** The names of the tests a TAP report shows started with no verdict after them (see tap-report.mjs). */
export function withoutVerdict (report: string): string[]
