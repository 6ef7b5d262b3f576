import { Type } from '@sinclair/typebox'
import { named } from '../http/schemas.js'
import { MfaCode, OfferedPassword } from '../sessions/session.schemas.js'

export const TotpEnrolment = named('TotpEnrolment', Type.Object({
  secret: Type.String({ description: 'The secret in base32, for typing into an app by hand. Shown only here.' }),
  otpauthUri: Type.String({ description: 'The `otpauth://totp/…` URI an authenticator app reads (SHA-1, 6 digits, 30 seconds).' }),
  qrCodeSvg: Type.String({ description: 'The URI as a QR code, an SVG document to show the person.' })
}, { description: 'An authenticator waiting for its first code (PUT /v1/users/{id}/totp).', examples: [{ secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', otpauthUri: 'otpauth://totp/Shop:ada%40example.com?issuer=Shop&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30', qrCodeSvg: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 45 45">…</svg>' }] }))

export const TotpActivationBody = named('TotpActivationRequest', Type.Object({
  code: MfaCode
}, { additionalProperties: false, description: 'The code the app shows now: it proves the app has the secret.', examples: [{ code: '492039' }] }))

export const TotpActivation = named('TotpActivation', Type.Object({
  recoveryCodes: Type.Array(Type.String(), { minItems: 10, maxItems: 10, description: 'Ten codes, each good once in place of an app code. Shown only here: the person keeps them somewhere safe.' })
}, { description: 'The second factor is on.', examples: [{ recoveryCodes: ['7k2m-9xqa-4hpt', 'c8vw-2n6r-jd0e', 'q4zs-ty1b-m7kx', '0fgh-8wer-2bnm', 'p3ca-vx9t-6yhj', 'w5ks-e2dr-n8qa', 'h7tm-4vbz-1xcp', 'r9yn-3jwe-k6sd', 'b2xq-7mht-0zfa', 'e6dj-5cwr-9nvk'] }] }))

export const TotpRemovalBody = named('TotpRemovalRequest', Type.Object({
  password: Type.Optional(OfferedPassword('The account\'s password: required for your own factor.')),
  code: Type.Optional(MfaCode)
}, { additionalProperties: false, description: 'The password and a code (or a recovery code), both, for your own factor; nothing for an administrator removing another user\'s.', examples: [{ password: 'correct horse battery', code: '492039' }] }))
