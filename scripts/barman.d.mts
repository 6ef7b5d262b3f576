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
export class RecoveryEndedEarly extends Error { log: string }
export function startRestoredCopy (options: { output: string, parent: string, port: number, bin: string, restoreCommand: string, recovery?: string[] }): Promise<{ log: string, stop: () => void }>
/** Spawn options for a process of the postgres user (as root), working in `home`. */
export function asPostgres (home: string): { uid?: number, gid?: number, cwd: string, env: Record<string, string | undefined> }
/** Makes the folder (0700) and gives it to the postgres user (as root). */
export function owned (path: string): string
