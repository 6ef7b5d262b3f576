import type { GeneratedId, Timestamp } from '../db/types.js'

// One hit of a limit counted over a sliding window (sliding-window.ts): a scope
// (`mail-address`, `token-client`, `signup`), the key it is counted by (an address, a client
// address) and when.
export interface LimitHitTable {
  id: GeneratedId
  scope: string
  key: string
  at: Timestamp
}
