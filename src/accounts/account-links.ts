import type { Config } from '../config/config.js'

// Links in mails are built from configuration only, never from a request's Host header (which
// a client chooses: a reset mail must not send its token to an attacker's host). With APP_URL
// they open the client application's own pages; without it, the service's pages
// (accounts/account-pages.ts) under PUBLIC_URL.

export type AccountPage = 'email-verification' | 'password-reset'

export function accountLink (config: Pick<Config, 'appUrl' | 'publicUrl'>, page: AccountPage, token: string): string {
  const base = config.appUrl ?? `${config.publicUrl}/account`
  return `${base}/${page}?token=${encodeURIComponent(token)}`
}

/** The service's name in its mails: the host people reach it (or the application) at. */
export function siteName (config: Pick<Config, 'appUrl' | 'publicUrl'>): string {
  return new URL(config.appUrl ?? config.publicUrl).host
}

/** The domain of MAIL_FROM's address: the right-hand side of every Message-ID the service makes. */
export function mailDomain (config: Pick<Config, 'mail'>): string {
  const from = config.mail.from
  const address = /<([^<>]+)>\s*$/.exec(from)?.[1] ?? from
  return address.slice(address.lastIndexOf('@') + 1)
}
