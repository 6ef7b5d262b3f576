import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/config.js'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import type { IdentityProviders } from '../oidc/identity-providers.js'
import { accountOfSignIn, confirmSignIn, isSimultaneousSignIn } from '../oidc/oidc.service.js'
import { sessionRepresentation } from '../sessions/session.service.js'
import { admit, admitted } from './admission.js'

/**
 * A sign-in with an identity provider: the provider confirms it (oidc.service.ts), then the
 * flow is spent, the account found, linked or made, and admitted (admission.ts), in one unit of
 * work.
 */
export async function providerSignIn (db: Db, config: Config, providers: IdentityProviders, log: FastifyBaseLogger, body: { provider: string, code: string, state: string }) {
  const signIn = await confirmSignIn(db, config, providers, body)
  const attempt = async () => await write(db, async (trx) => {
    const user = await accountOfSignIn(trx, config, signIn)
    return { user, admission: await admit(trx, config, user) }
  })
  let result: Awaited<ReturnType<typeof attempt>>
  try {
    result = await attempt()
  } catch (error) {
    // Two first sign-ins of one person at once: once more, this one finds the other's account.
    if (!isSimultaneousSignIn(error)) throw error
    log.info({ provider: signIn.provider.id }, 'sign-in met a simultaneous one; trying once more')
    result = await attempt()
  }
  const session = admitted(result.admission)
  return sessionRepresentation(session.token, session.expiresAt, result.user)
}
