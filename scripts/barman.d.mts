/** Barman streaming and backing up the HA recipe's cluster (see barman.mjs). */
export interface Barman {
  dir: string
  receiverPid: () => number | undefined
  archive: () => Promise<void>
  stop: () => Promise<void>
}

export interface RestoredPostgres {
  output: string
  port: number
  backup: string
  asOf: string
  seconds: number
  log: string
  stop: () => void
}

export const SLOT: string
export function barmanMissing (): string | undefined
export function configureBarman (options: { dir: string, port: number, bin: string, superuserPassword: string, replicationPassword: string }): string
export function startBarman (options: { dir: string, intervalSeconds?: number, say?: (line: string) => void }): Promise<Barman>
export function restorePostgres (options: { dir: string, output: string, port: number, at: Date | undefined, bin: string }): Promise<RestoredPostgres>
