// The one e-mail address rule: the WHATWG "valid e-mail address" (contract section 8).
// https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address
export const WHATWG_EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/
