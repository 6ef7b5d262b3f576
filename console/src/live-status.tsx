import type { LiveState } from './live.js'

/** The live stream's state in words; `what` says what appears while it is live. */
export function LiveStatus ({ state, what }: { state: LiveState, what: string }) {
  const words = state === 'live' ? `Live: ${what}.` : state === 'connecting' ? 'Connecting to the live stream…' : 'The live stream is reconnecting…'
  return <p role='status' class='live'>{words}</p>
}
