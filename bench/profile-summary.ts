// Summarises a V8 CPU profile (`node --cpu-prof`, e.g. from `BENCH_CPU_PROF=dir npm run bench`):
// self time by package or source file, the hottest functions, and the inclusive time of the
// functions named with --inclusive (a regular expression over function names). --from=S leaves
// out the first S seconds of the profile: start-up (loading modules, compiling every route's
// validator and serialiser) takes several seconds of CPU that would otherwise swamp the shares
// of the request path.
//
//   npx tsx bench/profile-summary.ts dir/CPU.….cpuprofile [--top=20] [--from=8] [--inclusive=compile|prepare]
import { readFileSync } from 'node:fs'

interface Node { id: number, callFrame: { functionName: string, url: string }, children?: number[] }
interface Profile { nodes: Node[], samples: number[], timeDeltas: number[] }

const args = process.argv.slice(2)
const file = args.find((a) => !a.startsWith('--'))
if (file === undefined) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top=N] [--inclusive=REGEX]')
const top = Number(args.find((a) => a.startsWith('--top='))?.slice(6) ?? 20)
const inclusive = args.find((a) => a.startsWith('--inclusive='))?.slice(12)
const fromMicros = Number(args.find((a) => a.startsWith('--from='))?.slice(7) ?? 0) * 1e6
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map<number, number>()
let elapsed = 0
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0
  elapsed += delta
  if (elapsed >= fromMicros) self.set(id, (self.get(id) ?? 0) + delta)
})

function area (node: Node): string {
  const { url, functionName } = node.callFrame
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg !== null) return pkg[1]!
  if (url.startsWith('node:')) return 'node core'
  const own = /\/(dist|src|bench)\/(.*)$/.exec(url)
  return own !== null ? `${own[1]}/${own[2]}` : url
}

const idle = new Set(['(idle)', '(program)'])
let busy = 0
for (const [id, t] of self) if (!idle.has(byId.get(id)!.callFrame.functionName)) busy += t
const pct = (t: number) => `${(100 * t / busy).toFixed(1).padStart(5)}%`

function tally (key: (n: Node) => string): Array<[string, number]> {
  const sums = new Map<string, number>()
  for (const [id, t] of self) {
    const node = byId.get(id)!
    if (idle.has(node.callFrame.functionName)) continue
    sums.set(key(node), (sums.get(key(node)) ?? 0) + t)
  }
  return [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)
}

console.log(`busy time ${(busy / 1e6).toFixed(2)} s (idle and "(program)" left out); shares are of the busy time\n`)
console.log('self time by package / file:')
for (const [k, t] of tally(area)) console.log(`  ${pct(t)}  ${k}`)
console.log('\nhottest functions (self time):')
for (const [k, t] of tally((n) => `${n.callFrame.functionName || '(anonymous)'}  [${area(n)}]`)) console.log(`  ${pct(t)}  ${k}`)

if (inclusive !== undefined) {
  // Inclusive time: a sample counts once for a function however deep the recursion.
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const pattern = new RegExp(inclusive)
  const sums = new Map<string, number>()
  for (const [id, t] of self) {
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at)!
      if (!pattern.test(node.callFrame.functionName)) continue
      const key = `${node.callFrame.functionName}  [${area(node)}]`
      if (!seen.has(key)) { seen.add(key); sums.set(key, (sums.get(key) ?? 0) + t) }
    }
  }
  console.log(`\ninclusive time of functions matching /${inclusive}/:`)
  for (const [k, t] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(t)}  ${k}`)
}
