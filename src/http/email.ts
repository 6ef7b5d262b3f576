// The one e-mail address rule: the WHATWG "valid e-mail address" (docs/api.md).
// https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address
export const WHATWG_EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/

/**
 * The form in which two addresses are compared (uniqueness, log-in): ASCII letters folded to
 * lower case, nothing else. A valid address is ASCII, so this is what `lower(email)` gives in
 * both databases; String.prototype.toLowerCase would also fold other characters into ASCII
 * ones (the Kelvin sign U+212A becomes "k"), letting an address sign-up refuses log in as
 * another account.
 */
export function emailKey (email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())
}
