import { Type } from '@sinclair/typebox'
import { named, Text } from '../http/schemas.js'
import { Email, Password } from '../users/user.schemas.js'

// A token arrives in a body, never in a URL the API reads. Missing, blank, over-long or not a
// string is a VALIDATION_ERROR on `token`; any other text that is not a live token of the
// operation's kind is INVALID_TOKEN (a link cut short by a mail program is a token like any other).
const Token = Text({ maxLength: 256, description: 'The token from the link in the mail (its `token` parameter).', examples: ['q3Zb0o9bK2m1d3rX6yJpVw8nT4uLhE7cA5sGfR2kPzM'] })

export const MailRequestBody = named('MailRequest', Type.Object({
  email: Email
}, { additionalProperties: false, description: 'The address to mail.', examples: [{ email: 'ada@example.com' }] }))

export const EmailVerificationBody = named('EmailVerificationRequest', Type.Object({
  token: Token
}, { additionalProperties: false, description: 'A verification token.', examples: [{ token: 'q3Zb0o9bK2m1d3rX6yJpVw8nT4uLhE7cA5sGfR2kPzM' }] }))

export const PasswordResetBody = named('PasswordResetRequest', Type.Object({
  token: Token,
  newPassword: Password
}, { additionalProperties: false, description: 'A reset token and the new password.', examples: [{ token: 'q3Zb0o9bK2m1d3rX6yJpVw8nT4uLhE7cA5sGfR2kPzM', newPassword: 'battery staple horse' }] }))
