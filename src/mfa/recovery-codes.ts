import { hash, randomInt } from 'node:crypto'

// Recovery codes: ten, shown once when the factor is activated, each good once in place of a
// code. 12 characters of a 32-letter alphabet without look-alikes (60 random bits), written in
// groups of four; only their SHA-256 is kept (a fast hash suffices for random values this long,
// as for tokens). Read back without case, spaces or dashes.

export const RECOVERY_CODE_COUNT = 10
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const LENGTH = 12

export function newRecoveryCode (): string {
  let code = ''
  for (let i = 0; i < LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)]
  return code.match(/.{4}/g)!.join('-')
}

/** The code as compared: lower case, without separators; undefined when it cannot be one. */
export function normalRecoveryCode (text: string): string | undefined {
  const code = text.toLowerCase().replace(/[\s-]/g, '')
  return code.length === LENGTH && [...code].every((c) => ALPHABET.includes(c)) ? code : undefined
}

export function hashRecoveryCode (normal: string): string {
  return hash('sha256', `recovery:${normal}`, 'hex')
}
