import type { Replication } from '../../src/backups/replication.js'

// What the replication tests share: a log that records what the replication says, and waiting
// for a fact with a bound.

export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

export interface Logged { level: string, msg: string }

export function recordingLog (): { lines: Logged[], log: ConstructorParameters<typeof Replication>[0]['log'] } {
  const lines: Logged[] = []
  const at = (level: string) => (_obj: object, msg: string) => { lines.push({ level, msg }) }
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } }
}

