// Makes `perf report` name the JavaScript it sampled correctly: node --perf-basic-prof appends
// a line to /tmp/perf-<pid>.map for every function it compiles, and V8 later compiles other code
// at the addresses of code it has freed, so after a warm-up many addresses have several lines
// and perf names them by the first: a request's hot path then reads as start-up code (a schema
// compiler, a module loader). This keeps, for every address, only the line written last: the
// code that was there when the process was sampled. The original is kept beside it (`.orig`).
//
//   node --perf-basic-prof dist/server.js …          # the process to look at
//   perf record -F 2000 -g -p <pid> -- sleep 5       # under load
//   npx tsx bench/perf-map.ts <pid>                  # before perf report or perf script
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'

interface Entry { start: number, end: number, name: string }

const pid = process.argv[2]
if (pid === undefined || !/^\d+$/.test(pid)) {
  process.stderr.write('usage: npx tsx bench/perf-map.ts <pid>\n')
  process.exit(2)
}
const map = `/tmp/perf-${pid}.map`
const original = `${map}.orig`
if (!existsSync(original)) copyFileSync(map, original)

/** The entries of the map in the order they were written, each removing those it overlaps. */
function latest (lines: string[]): Entry[] {
  const live: Entry[] = [] // sorted by start, none overlapping
  for (const line of lines) {
    const [address, size, ...name] = line.split(' ')
    const start = parseInt(address!, 16)
    const entry = { start, end: start + parseInt(size!, 16), name: name.join(' ') }
    // The first live entry that ends after this one starts, by binary search.
    let low = 0
    let high = live.length
    while (low < high) {
      const middle = (low + high) >> 1
      if (live[middle]!.end <= entry.start) low = middle + 1
      else high = middle
    }
    let past = low
    while (past < live.length && live[past]!.start < entry.end) past++
    live.splice(low, past - low, entry)
  }
  return live
}

const lines = readFileSync(original, 'utf8').split('\n').filter((line) => line !== '')
const kept = latest(lines)
writeFileSync(map, kept.map((e) => `${e.start.toString(16)} ${(e.end - e.start).toString(16)} ${e.name}\n`).join(''))
process.stdout.write(`${map}: ${lines.length} lines, ${kept.length} kept (the original: ${original})\n`)
