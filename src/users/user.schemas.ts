import { Type } from '@sinclair/typebox'
import { Image } from '../files/image.schemas.js'
import { Id, named, ReadOnly, ref, Text, Timestamp } from '../http/schemas.js'
import { OfferedPassword } from '../sessions/session.schemas.js'

export const Email = Text({ format: 'email', maxLength: 254, description: 'An e-mail address (WHATWG "valid e-mail address"), unique case-insensitively.', examples: ['ada@example.com'] })
export const Password = Text({ minLength: 8, maxLength: 50, description: '8 to 50 characters; never trimmed.', examples: ['correct horse battery'] })
export const UserName = Text({ maxLength: 20, description: 'At most 20 characters.', examples: ['Ada'] })

export const UserPublic = named('User', Type.Object({ id: Id, name: Type.String() }, { description: 'A user as anyone may see it.', examples: [{ id: 42, name: 'Ada' }] }))
export const UserPrivate = named('UserPrivate', Type.Object({ id: Id, email: Type.String(), name: Type.String() }, {
  description: 'A user as the user sees it (at sign-up and after a change).',
  examples: [{ id: 42, email: 'ada@example.com', name: 'Ada' }]
}))

export const UserAccount = named('UserAccount', Type.Object({
  id: Id,
  email: Type.String({ description: 'The account\'s address: where its mail goes, and what it logs in with.' }),
  name: Type.String(),
  emailVerified: Type.Boolean({ description: 'Whether a mailed link proved `email`.' }),
  pendingEmail: Type.Union([Type.String(), Type.Null()], { description: 'A new address asked for with PUT and waiting for its proof: it becomes `email` when the link mailed to it is used. Null when none.' })
}, {
  description: 'A user as the user sees it after a change, with the state of its address.',
  examples: [{ id: 42, email: 'ada@example.com', name: 'Ada', emailVerified: true, pendingEmail: 'ada@example.org' }]
}))

export const UserCreateBody = named('UserCreateRequest', Type.Object({
  email: Email,
  password: Password,
  name: UserName,
  id: ReadOnly('The user id.')
}, { additionalProperties: false, description: 'A new account.', examples: [{ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' }] }))

export const UserReplaceBody = named('UserReplaceRequest', Type.Object({
  email: Email,
  name: UserName,
  id: ReadOnly('The user id.')
}, { additionalProperties: false, description: 'The new e-mail address and name (both required).', examples: [{ email: 'ada@example.org', name: 'Ada L.' }] }))

export const PasswordChangeBody = named('PasswordChangeRequest', Type.Object({
  currentPassword: OfferedPassword('The password in use now.'),
  newPassword: Password
}, { additionalProperties: false, description: 'The password in use now and the new one.', examples: [{ currentPassword: 'correct horse battery', newPassword: 'battery staple horse' }] }))

export const Profile = named('Profile', Type.Object({
  id: Id,
  name: Type.String(),
  postCount: Type.Integer({ minimum: 0, description: 'How many posts the user has written.' }),
  createdAt: Timestamp,
  avatar: Type.Union([ref(Image), Type.Null()], { description: 'The user\'s picture (PUT /v1/users/{id}/avatar), or null.' })
}, { description: 'A user\'s public profile.', examples: [{ id: 42, name: 'Ada', postCount: 3, createdAt: '2026-11-21T16:30:00.000Z', avatar: null }] }))

export const ManagedUser = named('ManagedUser', Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: Type.Unsafe<'USER' | 'ADMIN'>({ type: 'string', enum: ['USER', 'ADMIN'], description: 'What the account may do: `ADMIN` administers the service.' }),
  emailVerified: Type.Boolean({ description: 'Whether a mailed link proved `email`.' }),
  pendingEmail: Type.Union([Type.String(), Type.Null()], { description: 'A new address waiting for its proof, or null.' }),
  mfaEnabled: Type.Boolean({ description: 'Whether a second factor (TOTP) is on.' }),
  createdAt: Timestamp
}, {
  description: 'A user as an administrator sees it (GET /v1/users).',
  examples: [{ id: 42, email: 'ada@example.com', name: 'Ada', role: 'USER', emailVerified: true, pendingEmail: null, mfaEnabled: false, createdAt: '2026-11-21T16:30:00.000Z' }]
}))
