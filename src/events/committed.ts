import type { Db } from '../db/schema.js'

// Who wants to know, in-process, that a unit of work that recorded events has committed: the
// dispatcher of the database handle (a delivery starts at once instead of at the next poll) and
// its event streams (a live event reaches them at once).

const listeners = new WeakMap<Db, Set<() => void>>()

export function onEventsCommitted (db: Db, listener: () => void): () => void {
  let set = listeners.get(db)
  if (set === undefined) listeners.set(db, set = new Set())
  set.add(listener)
  return () => { set.delete(listener) }
}

export function eventsCommitted (db: Db): void {
  for (const listener of listeners.get(db) ?? []) listener()
}
