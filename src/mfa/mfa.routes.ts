import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../events/actor.js'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { authenticate, currentUser, isAdmin, requireSelf } from '../auth/authentication.js'
import { requires } from '../auth/scopes.js'
import { queueAccountMail } from '../accounts/account.service.js'
import { nowIso } from '../db/types.js'
import { write } from '../db/write.js'
import { ApiError, type FieldError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IdParams, LOCATION_HEADER, NoContent, ref, success } from '../http/schemas.js'
import { beginSignInAttempt } from '../limits/login-throttle.js'
import { requireRecentAuthentication } from '../auth/recent-authentication.js'
import { clientOf } from '../http/client-address.js'
import { hasPassword, verifyAgainstDummy, verifyPassword } from '../users/password.js'
import { findUserById, lockUser } from '../users/user.repository.js'
import { toUserAccount } from '../users/user.representation.js'
import { recordEvent } from '../events/event.repository.js'
import type { UserRow } from '../users/user.table.js'
import { activateFactor, deleteFactor, findActiveFactor, findFactor, putPendingFactor, replaceRecoveryCodes, spendRecoveryCode } from './mfa.repository.js'
import { TotpActivation, TotpActivationBody, TotpEnrolment, TotpRemovalBody } from './mfa.schemas.js'
import { checkCode, NOT_THE_CODE, openSecret, secretContext, spendCode } from './mfa.service.js'
import { hashRecoveryCode, newRecoveryCode, normalRecoveryCode, RECOVERY_CODE_COUNT } from './recovery-codes.js'
import { enrolment, newSecret, stepOf } from './totp.js'

// The account's second factor (docs/accounts.md): enrolled (a secret waiting for its first
// code), activated by a code (ten recovery codes, shown once), removed with the password and a
// code, or by an administrator without them (the lost phone). Only the account itself (and an
// administrator removing it), with a log-in token: an API key may not change how its owner logs in. A wrong code or password here is 400 on its field (the caller is logged in, and a
// 401 would make client libraries drop the session), and counts as a failed log-in.

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect, config } = app

  /** The account of the path, 404 before 403 as for every write of a user. */
  const accountOf = async (request: FastifyRequest, id: bigint): Promise<UserRow> => {
    const user = await findUserById(db, id)
    if (user === undefined) throw new ApiError('USER_NOT_FOUND')
    requireSelf(request, id)
    return user
  }
  const attemptFor = async (user: UserRow, request: FastifyRequest) => await beginSignInAttempt(db, config, { email: user.email, client: clientOf(request), userId: user.id })
  const fieldsWrong = (errors: FieldError[], headers: Record<string, string>) => new ApiError('VALIDATION_ERROR', { errors, headers })
  // The name the app shows the factor under: the site's host name (a colon, as in host:port,
  // would end the issuer early in the otpauth:// label).
  const issuer = new URL(config.appUrl ?? config.publicUrl).hostname

  app.post('/users/:id/totp', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'enrolTotp',
      summary: 'Enrol an authenticator app',
      description: 'A new secret for a TOTP authenticator app (RFC 6238: SHA-1, 6 digits, 30 seconds), as text, an otpauth:// URI and a QR code. It waits for its first code (PUT /v1/users/{id}/totp); until then log-ins do not ask for it, and a new enrolment replaces it. 409 MFA_ALREADY_ENABLED when the account has an active one. Needs a recent session (403 REAUTHENTICATION_REQUIRED: POST /v1/sessions/current/reauthentication).',
      security: requires('session'),
      params: IdParams,
      response: {
        201: success(TotpEnrolment, { description: 'Enrolled; show the QR code (or the secret) to the person.', headers: LOCATION_HEADER }),
        // No body is read, but one sent is still checked as JSON.
        ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'USER_NOT_FOUND', 'ACCESS_DENIED', 'REAUTHENTICATION_REQUIRED', 'MFA_ALREADY_ENABLED')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const user = await accountOf(request, id)
    await requireRecentAuthentication(request)
    const box = await app.secretBox()
    const secret = newSecret()
    await write(db, async (trx) => {
      if (await lockUser(trx, dialect, id) === undefined) throw new ApiError('USER_NOT_FOUND')
      if (await findActiveFactor(trx, id) !== undefined) throw new ApiError('MFA_ALREADY_ENABLED')
      await putPendingFactor(trx, id, box.seal(secret, secretContext(id)), nowIso())
    })
    return await reply.code(201).header('location', `/v1/users/${id}/totp`).send(await enrolment(secret, user.email, issuer))
  })

  app.put('/users/:id/totp', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'activateTotp',
      summary: 'Turn the second factor on',
      description: 'The code the enrolled app shows now turns the factor on and answers ten recovery codes, shown only here. From then on a log-in asks for a code (401 MFA_REQUIRED). A wrong code is 400 VALIDATION_ERROR on `code` and counts as a failed log-in. Needs a recent session (403 REAUTHENTICATION_REQUIRED). The account\'s sessions stay, and a notice is mailed.',
      security: requires('session'),
      params: IdParams,
      body: ref(TotpActivationBody),
      response: {
        200: success(TotpActivation, { description: 'On; the recovery codes.' }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'USER_NOT_FOUND', 'ACCESS_DENIED', 'REAUTHENTICATION_REQUIRED', 'TOTP_NOT_FOUND', 'MFA_ALREADY_ENABLED', 'TOO_MANY_REQUESTS')
      }
    }
  }, async (request) => {
    const id = BigInt(request.params.id)
    const user = await accountOf(request, id)
    await requireRecentAuthentication(request)
    const factor = await findFactor(db, id)
    if (factor === undefined) throw new ApiError('TOTP_NOT_FOUND')
    if (factor.status === 'ACTIVE') throw new ApiError('MFA_ALREADY_ENABLED')
    // The key first: a server without one answers 503 before anything counts against the person.
    const box = await app.secretBox()
    const attempt = await attemptFor(user, request)
    const step = stepOf(openSecret(box, factor), request.body.code.trim())
    if (step === undefined) throw fieldsWrong([{ field: 'code', message: NOT_THE_CODE }], attempt.headers(true))
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
    await write(db, async (trx) => {
      // Another request may have turned it on, or replaced it, meanwhile.
      if (!await activateFactor(trx, factor.id, step, nowIso())) throw new ApiError((await findActiveFactor(trx, id)) === undefined ? 'TOTP_NOT_FOUND' : 'MFA_ALREADY_ENABLED')
      await replaceRecoveryCodes(trx, id, codes.map((code) => hashRecoveryCode(normalRecoveryCode(code)!)))
      await attempt.succeeded(trx)
      // A factor turned on without its owner would lock them out: they hear of it at once.
      await queueAccountMail(trx, config, { kind: 'mfa-changed', userId: id, address: user.email, data: { name: user.name, what: 'enabled' } })
    })
    return { recoveryCodes: codes }
  })

  app.delete('/users/:id/totp', {
    onRequest: authenticate,
    schema: {
      tags: ['users'],
      operationId: 'deleteTotp',
      summary: 'Turn the second factor off (yours, or a user\'s as an administrator)',
      description: 'Your own factor needs the password and a code from the app (or a recovery code): a missing one is 400 VALIDATION_ERROR on its field, a wrong one too (both named when both are wrong) and counts as a failed log-in. ' +
        'An administrator removes another user\'s factor without either (the lost phone): the body may be empty or absent, and what it holds is not read; the user is mailed a notice and a `user.updated` event is recorded. ' +
        'Anyone else: 403 ACCESS_DENIED. The recovery codes and open second-factor challenges go with the factor, the account\'s sessions stay, and a notice is mailed.',
      security: requires('session'),
      params: IdParams,
      body: ref(TotpRemovalBody),
      response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'USER_NOT_FOUND', 'ACCESS_DENIED', 'TOTP_NOT_FOUND', 'TOO_MANY_REQUESTS') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const found = await findUserById(db, id)
    if (found === undefined) throw new ApiError('USER_NOT_FOUND')
    const caller = currentUser(request)
    if (caller.id !== id) {
      if (!isAdmin(caller)) throw new ApiError('ACCESS_DENIED')
      await write(db, async (trx) => {
        const user = await lockUser(trx, dialect, id)
        if (user === undefined) throw new ApiError('USER_NOT_FOUND')
        if (await findActiveFactor(trx, id) === undefined) throw new ApiError('TOTP_NOT_FOUND')
        await deleteFactor(trx, id)
        await queueAccountMail(trx, config, { kind: 'mfa-changed', userId: id, address: user.email, data: { name: user.name, what: 'removed' } })
        await recordEvent(trx, { type: 'user.updated', resourceId: id, audience: id, data: toUserAccount(user), actor: actorOf(request) })
      })
      return await reply.code(204).send(null)
    }
    const user = found
    const { password, code } = request.body
    const missing: FieldError[] = []
    if (password === undefined) missing.push({ field: 'password', message: 'is required' })
    if (code === undefined) missing.push({ field: 'code', message: 'is required' })
    if (password === undefined || code === undefined) throw fieldsWrong(missing, {})
    const factor = await findActiveFactor(db, id)
    if (factor === undefined) throw new ApiError('TOTP_NOT_FOUND')
    const box = await app.secretBox()
    const attempt = await attemptFor(user, request)
    // An account without a password (made by a provider) takes the time of a wrong one.
    const passwordRight = hasPassword(user.password_hash) ? await verifyPassword(user.password_hash, password) : await verifyAgainstDummy(password)
    const check = checkCode(box, factor, code)
    const wrong: FieldError[] = []
    if (!passwordRight) wrong.push({ field: 'password', message: 'is not your password' })
    if (check === undefined) wrong.push({ field: 'code', message: NOT_THE_CODE })
    if (wrong.length > 0) throw fieldsWrong(wrong, attempt.headers(true))
    const refused = new Error('code refused')
    try {
      await write(db, async (trx) => {
        // A recovery code is spent without its own notice: the factor's removal has one.
        const spent = check?.kind === 'recovery' ? await spendRecoveryCode(trx, id, check.hash) : await spendCode(trx, config, user, check)
        if (!spent) throw refused
        await deleteFactor(trx, id)
        await queueAccountMail(trx, config, { kind: 'mfa-changed', userId: id, address: user.email, data: { name: user.name, what: 'disabled' } })
        await attempt.succeeded(trx)
      })
    } catch (error) {
      if (error !== refused) throw error
      throw fieldsWrong([{ field: 'code', message: NOT_THE_CODE }], attempt.headers(true))
    }
    return await reply.code(204).send(null)
  })
}

export const mfaRoutes = fp(routes, { name: 'mfa', dependencies: [...FEATURE_PREREQUISITES, 'secret-box'], encapsulate: true })
