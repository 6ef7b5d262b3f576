// Both drivers read every integer as a BigInt (db/types.ts), and a representation keeps them so:
// the schema's serializer writes a BigInt as a JSON number, JSON.stringify refuses one. Where a
// representation is written by the runtime's JSON.stringify instead (the answers of the fast
// path, pipeline/fast-reads.ts: one native call that writes flat text, where the serializer's
// text is built piece by piece and flattened again before it can be measured, hashed and sent),
// its integers are made numbers when it is built, with `asNumber`, which refuses one that a
// number cannot hold exactly: that answer is then left to the serializer, which writes every
// digit.

/** The representation T as JSON.stringify takes it: its BigInts as numbers. */
export type JsonReady<T> = T extends bigint
  ? number
  : T extends ReadonlyArray<infer U> ? Array<JsonReady<U>> : T extends object ? { [K in keyof T]: JsonReady<T[K]> } : T

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER)

/** An integer as a JSON number; a RangeError past ±(2^53 − 1), where a number would lose digits. */
export function asNumber (value: bigint): number {
  if (value > MAX_EXACT || value < -MAX_EXACT) throw new RangeError(`${value} is beyond the integers a JSON number holds exactly`)
  return Number(value)
}

/** An integer as the representation keeps it (for the schema's serializer). */
export function asBigInt (value: bigint): bigint {
  return value
}
