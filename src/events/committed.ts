import type { Db } from '../db/schema.js'

// The dispatcher of a database handle is told, in-process, when a transaction that recorded
// events has committed, so a delivery starts at once instead of at the next poll.

const listeners = new WeakMap<Db, () => void>()

export function onEventsCommitted (db: Db, listener: () => void): () => void {
  listeners.set(db, listener)
  return () => { if (listeners.get(db) === listener) listeners.delete(db) }
}

export function eventsCommitted (db: Db): void {
  listeners.get(db)?.()
}
