import { Type } from '@sinclair/typebox'
import { Id, ReadOnly, Text, Timestamp } from '../http/schemas.js'
import { OfferedPassword } from '../sessions/session.schemas.js'

export const Email = Text({ format: 'email', maxLength: 254, description: 'An e-mail address (WHATWG "valid e-mail address"), unique case-insensitively.', examples: ['ada@example.com'] })
export const Password = Text({ minLength: 8, maxLength: 50, description: '8 to 50 characters; never trimmed.', examples: ['correct horse battery'] })
export const UserName = Text({ maxLength: 20, description: 'At most 20 characters.', examples: ['Ada'] })

export const UserPublic = Type.Object({ id: Id, name: Type.String() }, { description: 'A user as anyone may see it.' })
export const UserPrivate = Type.Object({ id: Id, email: Type.String(), name: Type.String() }, { description: 'A user as the user sees it.' })

export const UserCreateBody = Type.Object({
  email: Email,
  password: Password,
  name: UserName,
  id: ReadOnly('The user id.')
}, { additionalProperties: false })

export const UserReplaceBody = Type.Object({
  email: Email,
  name: UserName,
  id: ReadOnly('The user id.')
}, { additionalProperties: false })

export const PasswordChangeBody = Type.Object({
  currentPassword: OfferedPassword('The password in use now.'),
  newPassword: Password
}, { additionalProperties: false })

export const Profile = Type.Object({
  id: Id,
  name: Type.String(),
  postCount: Type.Integer({ minimum: 0 }),
  createdAt: Timestamp
}, { description: 'A user\'s public profile.' })
