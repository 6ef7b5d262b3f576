// How the console writes the API's values for people.

export const date = (iso: string): string => new Date(iso).toLocaleString()

/** An image's address on this origin: the service names its files by PUBLIC_URL, which may be
 * another name for this host, and the page's policy loads images from its own origin only. */
export const sameOrigin = (url: string): string => new URL(url).pathname

const STATUS: Record<string, string> = { PAID: 'Paid', SHIPPED: 'Shipped', CANCELED: 'Canceled' }
export const orderStatus = (status: string): string => STATUS[status] ?? status
