// What `npm test` (scripts/test.mjs) reads in a pass's TAP report beyond node's own totals.
// Plain JavaScript so that node runs it without a build; scripts/tap-report.d.mts types it.

/**
 * The tests a TAP report shows started (`# Subtest: name`) with no verdict (`ok` or `not ok` at
 * the same depth) after them: the process of their file ended, or was cut off, before it reported
 * one. Each is a failure: it ran, but nobody knows how it ended.
 */
export function withoutVerdict (report) {
  const open = []
  const missing = []
  for (const line of report.split('\n')) {
    const started = /^( *)# Subtest: (.*)$/.exec(line)
    const ended = /^( *)(?:not )?ok \d+ - (.*?)(?: # .*)?$/.exec(line)
    if (started !== null) {
      open.push({ depth: started[1].length, name: started[2] })
    } else if (ended !== null) {
      const depth = ended[1].length
      // Deeper tests still open when this one ends never got a verdict of their own. (A file's
      // events are reported together, after the file's earlier siblings': depths nest.)
      while (open.length > 0 && open.at(-1).depth > depth) missing.push(open.pop().name)
      if (open.at(-1)?.depth === depth && open.at(-1).name === ended[2]) open.pop()
    }
  }
  return [...missing, ...open.reverse().map((test) => test.name)]
}
