import { Type, type TString } from '@sinclair/typebox'
import { Id, Text, Timestamp } from '../http/schemas.js'

/**
 * A password offered for checking (log-in, current password): non-blank, since no account can
 * have a blank one. Any other wrong password is 401, whatever its length, so that the answer
 * says nothing about the password rules; the upper bound only caps the work a request causes.
 */
export function OfferedPassword (description = 'The account\'s password.'): TString {
  return Text({ maxLength: 1000, description })
}

export const LoginBody = Type.Object({
  // Not format-checked: an address that cannot belong to any account is simply not found.
  email: Text({ maxLength: 254, description: 'The e-mail address the account was created with (any case).' }),
  password: OfferedPassword()
}, { additionalProperties: false })

export const Session = Type.Object({
  token: Type.String({ description: 'Opaque bearer token (256 random bits). Send it as `Authorization: Bearer TOKEN`.' }),
  tokenType: Type.Literal('Bearer'),
  expiresAt: Timestamp,
  user: Type.Object({
    id: Id,
    email: Type.String(),
    name: Type.String(),
    role: Type.Union([Type.Literal('USER'), Type.Literal('ADMIN')])
  })
})
