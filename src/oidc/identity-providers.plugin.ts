import fp from 'fastify-plugin'
import { IdentityProviders } from './identity-providers.js'

// One set of providers per instance, shared by the routes that begin and finish a sign-in, so
// that a provider's discovery is made once and reused.
export const identityProviders = fp(async (app) => {
  app.decorate('identityProviders', new IdentityProviders(app.config.oidc, app.log.child({ component: 'oidc' })))
}, { name: 'identity-providers' })
