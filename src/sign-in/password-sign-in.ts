import type { Config } from '../config/config.js'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import { sessionRepresentation, verifyCredentials } from '../sessions/session.service.js'
import { admit, admitted } from './admission.js'

/** A log-in with an e-mail address and password: checked under the log-in limits, then admitted (admission.ts). */
export async function logIn (db: Db, config: Config, email: string, password: string, client: string) {
  const { user, headers, attempt } = await verifyCredentials(db, config, email, password, client)
  // One unit of work (one commit) for everything the log-in writes: the attempt settled, and the
  // session or the challenge.
  const admission = await write(db, async (trx) => await admit(trx, config, user, attempt))
  const session = admitted(admission, headers)
  return { session: sessionRepresentation(session.token, session.expiresAt, user), headers }
}
