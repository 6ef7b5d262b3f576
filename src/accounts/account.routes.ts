import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { BODY_ERRORS, empty, errorResponses, NoContent, ref } from '../http/schemas.js'
import { clientOf } from '../http/client-address.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { EmailVerificationBody, MailRequestBody, PasswordResetBody } from './account.schemas.js'
import { requestMail, resetPassword, verifyEmail } from './account.service.js'

// The account operations a person performs from a mail (docs/accounts.md). Public: whoever holds
// the mail proves the address by its token; asking for a mail says nothing about whether an
// account has the address.

const Accepted = empty('Accepted: a mail goes out if there is anything to send, whether or not an account has the address (the answer is the same either way).')

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect, config } = app

  /** Asking for a mail by address: the same answer, limits and work whatever the address (account.service.ts). */
  const mailRequest = (url: string, kind: 'verify-email' | 'reset-password', operationId: string, summary: string, description: string): void => {
    app.post(url, {
      schema: {
        tags: ['accounts'],
        operationId,
        summary,
        description,
        security: [],
        body: ref(MailRequestBody),
        response: { 202: Accepted, ...errorResponses(...BODY_ERRORS, 'TOO_MANY_REQUESTS') }
      }
    }, async (request, reply) => {
      const headers = await requestMail(db, config, kind, request.body.email)
      return await reply.code(202).headers(headers).send()
    })
  }

  mailRequest('/email-verification-tokens', 'verify-email', 'requestEmailVerification', 'Mail a new verification link',
    'Mails a new verification token to the address if an account has it unverified, or asks for it as its new address; voids the account\'s earlier verification tokens. The answer is 202 either way. At most one mail per address a minute and five an hour (429 past that, the same for every address).')

  app.post('/email-verifications', {
    schema: {
      tags: ['accounts'],
      operationId: 'verifyEmail',
      summary: 'Verify an e-mail address',
      description: 'Spends a verification token: the address it was mailed to becomes verified, or, for a new address asked for with PUT /v1/users/{id}, becomes the account\'s `email` (409 DUPLICATE_EMAIL if another account took it meanwhile; the old address is told). A token unknown, used, voided or expired is 400 INVALID_TOKEN. At most 20 failed tokens a minute per client address.',
      security: [],
      body: ref(EmailVerificationBody),
      response: { 204: NoContent, ...errorResponses(...BODY_ERRORS, 'INVALID_TOKEN', 'DUPLICATE_EMAIL', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    await verifyEmail(db, dialect, config, request.body.token, clientOf(request))
    return await reply.code(204).send(null)
  })

  mailRequest('/password-reset-tokens', 'reset-password', 'requestPasswordReset', 'Mail a password reset link',
    'Mails a reset token (good for 30 minutes, once) to the account with this address, verified or not; voids the account\'s earlier reset tokens. The answer is 202, in the same time, whether or not an account has the address. At most one mail per address a minute and five an hour (429 past that, the same for every address).')

  app.post('/password-resets', {
    schema: {
      tags: ['accounts'],
      operationId: 'resetPassword',
      summary: 'Set a new password with a reset token',
      description: 'Spends a reset token: the password is replaced (the rules of sign-up), every session of the account ends, every other reset token is void and a notice goes to the address. No session is made: log in with the new password. API keys stay. A token unknown, used, voided or expired is 400 INVALID_TOKEN. At most 20 failed tokens a minute per client address.',
      security: [],
      body: ref(PasswordResetBody),
      response: { 204: NoContent, ...errorResponses(...BODY_ERRORS, 'INVALID_TOKEN', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    await resetPassword(db, dialect, config, request.body.token, request.body.newPassword, clientOf(request))
    return await reply.code(204).send(null)
  })
}

export const accountRoutes = fp(routes, { name: 'accounts', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
