// The mails the service sends, each rendered as a plain-text part and an HTML part from one
// description, so that both parts always say the same thing.

export type MailContent =
  // newAddress: the mail confirms a change of address and goes to the new address.
  | { kind: 'verify-email', name: string, link: string, hours: number, newAddress: boolean }
  | { kind: 'reset-password', name: string, link: string, minutes: number }
  // A notice to the old address once a change of address took effect.
  | { kind: 'email-changed', name: string, oldEmail: string, newEmail: string }
  | { kind: 'password-changed', name: string, how: 'reset' | 'change' }
  // The second factor was turned on or removed, or a recovery code was used in its place.
  | { kind: 'mfa-changed', name: string, what: 'enabled' | 'disabled' | 'removed' | 'recovery-code-used', remaining: number }
  // A new way in: an identity provider linked to the account.
  | { kind: 'identity-linked', name: string, provider: string }
  // An API key made for the account: its name, scopes and public prefix, never the key.
  | { kind: 'api-key-created', name: string, keyName: string, scopes: string[], prefix: string }

export interface RenderedMail { subject: string, text: string, html: string }

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for HTML element content and for quoted attribute values alike. */
export function escapeHtml (value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!)
}

// A value from outside (a name, an address) must not break the plain-text layout: a line break
// in a name could otherwise forge lines, e.g. a fake link on a line of its own.
function oneLine (value: string): string {
  return value.replace(/\r\n|[\r\n\v\f\u0085\u2028\u2029]/g, ' ')
}

// A paragraph is static wording with values from outside between; keeping them apart lets each
// part treat the values as it must (escaped in HTML, kept on one line in text).
type Part = string | { value: string }
type Paragraph = Part[]
type Block =
  | { type: 'paragraph', parts: Paragraph }
  | { type: 'link', url: string, label: string }

function p (strings: TemplateStringsArray, ...values: string[]): Block {
  const parts: Part[] = []
  strings.forEach((s, i) => {
    if (s !== '') parts.push(s)
    if (i < values.length) parts.push({ value: values[i]! })
  })
  return { type: 'paragraph', parts }
}

const plural = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`

const IGNORE = 'If you did not ask for this, ignore this mail; nothing changes.'
// A sign-up's verification mail may reach an owner who never signed up: someone else made the
// account with their address. Verifying it would hand it to its maker; a reset takes it.
const NOT_YOUR_ACCOUNT = 'If you did not make this account, do not open the link: someone else used your address. Ignore this mail, or take the account with a password reset, which ends everything its maker set up on it.'
const NOT_YOU = "If this was not you, reset your password at once and check the account's e-mail address."

function describe (content: MailContent, site: string): { subject: string, blocks: Block[] } {
  const greeting = p`Hello ${content.name},`
  switch (content.kind) {
    case 'verify-email': {
      const validity = `This link works for ${plural(content.hours, 'hour')}, once.`
      if (content.newAddress) {
        return {
          subject: 'Confirm your new e-mail address',
          blocks: [
            greeting,
            p`You asked to use this e-mail address for your account at ${site}. To confirm the change, open this link:`,
            { type: 'link', url: content.link, label: 'Confirm new e-mail address' },
            p`${validity} Until you confirm, the account keeps its current address.`,
            p`${IGNORE}`
          ]
        }
      }
      return {
        subject: 'Verify your e-mail address',
        blocks: [
          greeting,
          p`Please confirm that this is your e-mail address for your account at ${site} by opening this link:`,
          { type: 'link', url: content.link, label: 'Verify e-mail address' },
          p`${validity}`,
          p`${NOT_YOUR_ACCOUNT}`
        ]
      }
    }
    case 'reset-password':
      return {
        subject: 'Reset your password',
        blocks: [
          greeting,
          p`Someone asked to reset the password of your account at ${site}. To choose a new password, open this link:`,
          { type: 'link', url: content.link, label: 'Choose a new password' },
          p`This link works for ${plural(content.minutes, 'minute')}, once.`,
          p`${IGNORE} Your password stays as it is.`
        ]
      }
    case 'email-changed':
      return {
        subject: 'Your e-mail address was changed',
        blocks: [
          greeting,
          p`The e-mail address of your account at ${site} was changed from ${content.oldEmail} to ${content.newEmail}.`,
          p`This address (${content.oldEmail}) no longer receives mail for the account.`,
          p`${NOT_YOU}`
        ]
      }
    case 'password-changed':
      return {
        subject: 'Your password was changed',
        blocks: [
          greeting,
          content.how === 'reset'
            ? p`The password of your account at ${site} was reset with a link sent to this address.`
            : p`The password of your account at ${site} was changed.`,
          p`${NOT_YOU}`
        ]
      }
    case 'identity-linked':
      return {
        subject: 'A sign-in provider was linked to your account',
        blocks: [
          greeting,
          p`Your account at ${site} can now be signed in to through the identity provider ${content.provider}, which vouched for this address.`,
          p`If this was not you, sign in, unlink ${content.provider} from the account and reset your password at once.`
        ]
      }
    case 'api-key-created':
      return {
        subject: 'A new API key was created',
        blocks: [
          greeting,
          p`An API key named ${content.keyName} (${content.prefix}…) was created for your account at ${site}, with the scopes ${content.scopes.join(', ')}. It acts as you within them until it expires or is revoked.`,
          p`If this was not you, revoke it (DELETE /v1/api-keys/{id}) and reset your password at once.`
        ]
      }
    case 'mfa-changed':
      if (content.what === 'enabled') {
        return {
          subject: 'A second factor was turned on',
          blocks: [
            greeting,
            p`An authenticator app was added to your account at ${site}: from now on a log-in also asks for a code from it.`,
            p`If this was not you, someone has your password or a session of yours: reset your password at once, and ask the site's operator to remove the second factor you did not add.`
          ]
        }
      }
      if (content.what === 'removed') {
        return {
          subject: 'Your second factor was removed by an administrator',
          blocks: [
            greeting,
            p`An administrator of ${site} removed the authenticator app of your account, as asked when a phone is lost: a log-in now needs only the password. Add an app again from your account.`,
            p`If you did not ask for this, reset your password at once and tell the site's operator.`
          ]
        }
      }
      return content.what === 'disabled'
        ? {
            subject: 'Your second factor was turned off',
            blocks: [
              greeting,
              p`The authenticator app of your account at ${site} was removed: a log-in now needs only the password.`,
              p`${NOT_YOU}`
            ]
          }
        : {
            subject: 'A recovery code was used',
            blocks: [
              greeting,
              p`One of the recovery codes of your account at ${site} was used to log in. ${plural(content.remaining, 'code')} left.`,
              p`${NOT_YOU}`
            ]
          }
  }
}

function textOf (blocks: Block[], site: string): string {
  const lines = blocks.map((block) => block.type === 'link'
    ? oneLine(block.url)
    : block.parts.map((part) => typeof part === 'string' ? part : oneLine(part.value)).join(''))
  return `${lines.join('\n\n')}\n\n-- \n${oneLine(site)}\n`
}

const BUTTON_STYLE = 'display:inline-block;padding:10px 18px;background:#1a56db;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:bold'

function htmlOf (subject: string, blocks: Block[], site: string): string {
  const body = blocks.map((block) => {
    if (block.type === 'paragraph') {
      return `<p>${block.parts.map((part) => escapeHtml(typeof part === 'string' ? part : part.value)).join('')}</p>`
    }
    const href = escapeHtml(block.url)
    return `<p><a href="${href}" style="${BUTTON_STYLE}">${escapeHtml(block.label)}</a></p>\n` +
      `<p>If the button does not work, copy this link into your browser:<br><a href="${href}">${href}</a></p>`
  })
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(subject)}</title>`,
    '</head>',
    '<body style="font-family:sans-serif;line-height:1.5;color:#222222;max-width:40em">',
    ...body,
    `<p style="color:#666666">&mdash; ${escapeHtml(site)}</p>`,
    '</body>',
    '</html>',
    ''
  ].join('\n')
}

export function renderMail (content: MailContent, site: string): RenderedMail {
  const { subject, blocks } = describe(content, site)
  return { subject, text: textOf(blocks, site), html: htmlOf(subject, blocks, site) }
}
