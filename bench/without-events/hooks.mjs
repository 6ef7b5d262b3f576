// Module hooks (registered by ./register.mjs) that take event recording out of the service:
//
// - src/events/event.repository: recordEvent() records nothing and announceEvents() wakes no
//   dispatcher; every other export (the feed's reads, numbering, pruning) is the real one;
// - src/events/recorded-write: writeWithEvents() runs the write's own statement, alone (a unit
//   of work of its own, or in the caller's), and returns its row, as the route would without
//   events (on PostgreSQL the bare INSERT or UPDATE instead of the one statement that also
//   writes the events).
//
// What stays: the arguments the callers build before they call these (a representation object
// for a second event, a closure), a few object allocations; so "without events" is, if anything,
// a little slow, and the cost measured against it a little low. The representation's JSON, the
// event ids, the rows and the dispatcher's wake-up are all left out.
//
// Each stand-in is the real module's URL with a `?without-events` query; the stand-in re-exports
// the real module (imports from a stand-in resolve untouched) and overrides what records events.
import { URL } from 'node:url'

const MARK = 'without-events'
const TARGET = /\/events\/(event\.repository|recorded-write)\.(js|ts)$/

const standIns = {
  'event.repository': (real) => [
    `export * from ${JSON.stringify(real)}`,
    'export async function recordEvent () {}',
    'export function announceEvents () {}'
  ],
  'recorded-write': (real, extension) => [
    `export * from ${JSON.stringify(real)}`,
    `import { writeStatement } from ${JSON.stringify(new URL(`../db/compiled.${extension}`, real).href)}`,
    'export async function writeWithEvents (executor, statement) {',
    '  const row = (await writeStatement(executor, statement.query)).rows[0]',
    "  if (row === undefined) throw new Error('writeWithEvents: the write changed no row')",
    '  return row',
    '}'
  ]
}

export async function resolve (specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  if (context.parentURL?.endsWith(`?${MARK}`) === true || !TARGET.test(resolved.url)) return resolved
  return { ...resolved, url: `${resolved.url}?${MARK}` }
}

export async function load (url, context, nextLoad) {
  if (!url.endsWith(`?${MARK}`)) return await nextLoad(url, context)
  const real = url.slice(0, -(MARK.length + 1))
  const [, name, extension] = TARGET.exec(real)
  return { format: 'module', source: standIns[name](real, extension).join('\n') + '\n', shortCircuit: true }
}
