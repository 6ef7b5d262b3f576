import { Type, type Static } from '@sinclair/typebox'
import { Id, Timestamp } from '../http/schemas.js'

export const LoginBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254, 'x-well-formed': true, description: 'The e-mail address the account was created with (any case).' }),
  // Any wrong password is 401, whatever its length; the bound only caps the work a request can cause.
  password: Type.String({ minLength: 1, maxLength: 1000, 'x-well-formed': true })
}, { additionalProperties: false })
export type LoginBodyType = Static<typeof LoginBody>

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
