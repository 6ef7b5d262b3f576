import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getDefaultAutoSelectFamily, setDefaultAutoSelectFamily } from 'node:net'
import { describe, test } from 'node:test'
import { request } from 'undici'
import {
  checkTarget, checkTargetUrl, deliveryAgent, MAX_URL_LENGTH, TargetRefusedError, type TargetPolicy
} from '../../src/webhooks/target-guard.js'
import { parseAllowHosts } from '../../src/webhooks/allow-hosts.js'

// The server-side request forgery guard of webhook deliveries: what an endpoint URL may be, and
// that a delivery's connection goes only where the checks allowed, whatever a name resolves to
// by then.

const none: TargetPolicy = { allowHosts: [] }

describe('checkTargetUrl', () => {
  const accepted: Array<[string, string, TargetPolicy?]> = [
    ['a public IPv4 literal', 'https://93.184.215.14/hooks'],
    ['a public IPv6 literal', 'https://[2606:4700::1111]/hooks'],
    ['a public host name (no DNS)', 'https://example.com/hooks?x=1'],
    ['any port', 'https://example.com:8443/hooks'],
    ['http on an address allowed by itself', 'http://127.0.0.1:3000/hooks', { allowHosts: ['127.0.0.1'] }],
    ['http on an address inside an allowed range', 'http://127.0.0.2:3000/hooks', { allowHosts: ['127.0.0.0/8'] }],
    ['an allowed IPv6 loopback', 'http://[::1]:3000/', { allowHosts: ['::1/128'] }],
    ['an IPv4-mapped address inside an allowed IPv4 range', 'http://[::ffff:10.1.2.3]/', { allowHosts: ['10.0.0.0/8'] }],
    ['a private address allowed, over https', 'https://10.1.2.3/', { allowHosts: ['10.0.0.0/8'] }],
    ['http on an allowed host name', 'http://localhost:3000/hooks', { allowHosts: ['localhost'] }],
    ['an allowed host name, case-insensitive', 'http://LocalHost/', { allowHosts: parseAllowHosts('LOCALHOST') }],
    ['exactly the longest URL', `https://example.com/${'a'.repeat(MAX_URL_LENGTH - 'https://example.com/'.length)}`]
  ]
  for (const [name, url, policy] of accepted) {
    test(`accepts ${name}`, () => {
      assert.equal(checkTargetUrl(url, policy ?? none), undefined)
    })
  }

  const refused: Array<[string, string, RegExp, TargetPolicy?]> = [
    ['http', 'http://example.com/', /must use https/],
    ['http on an address outside the allowed range', 'http://127.0.0.1/', /must use https/, { allowHosts: ['10.0.0.0/8'] }],
    ['http on a host name that is only a suffix of an allowed one', 'http://host/', /must use https/, { allowHosts: ['localhost'] }],
    ['http on a sub-domain of an allowed host', 'http://a.example.com/', /must use https/, { allowHosts: ['example.com'] }],
    ['ftp', 'ftp://example.com/', /must use https/],
    ['a file URL', 'file:///etc/passwd', /must use https/],
    ['a user name and password', 'https://user:pass@example.com/', /user name or password/],
    ['a user name alone', 'https://user@example.com/', /user name or password/],
    ['a fragment', 'https://example.com/#x', /fragment/],
    ['an empty fragment', 'https://example.com/#', /fragment/],
    ['a URL over the limit', `https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`, /at most 2048 characters/],
    ['a URL that grows over the limit when encoded', `https://example.com/${'é'.repeat(500)}`, /at most 2048 characters/],
    ['not a URL', 'example.com/hooks', /not a valid URL/],
    ['an empty string', '', /not a valid URL/],
    ['a bad port', 'https://example.com:99999/', /not a valid URL/],
    ['loopback', 'https://127.0.0.1/', /loopback address \(127\.0\.0\.1\)/],
    ['loopback, another address', 'https://127.5.6.7/', /loopback/],
    ['loopback written in hexadecimal', 'https://0x7f.1/', /loopback address \(127\.0\.0\.1\)/],
    ['loopback as one number', 'https://2130706433/', /loopback/],
    ['IPv6 loopback', 'https://[::1]/', /loopback/],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/', /loopback/],
    ['IPv4-mapped private, in hexadecimal', 'https://[::ffff:a00:1]/', /private/],
    ['IPv4-compatible loopback', 'https://[::7f00:1]/', /IPv4-compatible/],
    ['10/8', 'https://10.0.0.1/', /private address \(10\.0\.0\.1\)/],
    ['172.16/12', 'https://172.16.0.1/', /private/],
    ['172.31', 'https://172.31.255.254/', /private/],
    ['192.168/16', 'https://192.168.1.1/', /private/],
    ['the metadata service', 'https://169.254.169.254/latest/meta-data/', /link-local/],
    ['carrier-grade NAT', 'https://100.64.0.1/', /carrier-grade NAT/],
    ['0.0.0.0', 'https://0.0.0.0/', /unspecified/],
    ['0/8', 'https://0.1.2.3/', /unspecified/],
    ['broadcast', 'https://255.255.255.255/', /broadcast/],
    ['multicast', 'https://224.0.0.1/', /multicast/],
    ['documentation space', 'https://192.0.2.1/', /reserved/],
    ['unique local IPv6', 'https://[fc00::1]/', /unique local/],
    ['unique local IPv6, fd00::/8', 'https://[fd12:3456::1]/', /unique local/],
    ['link-local IPv6', 'https://[fe80::1]/', /link-local/],
    ['the unspecified IPv6 address', 'https://[::]/', /unspecified/],
    ['NAT64', 'https://[64:ff9b::a00:1]/', /NAT64/],
    ['6to4', 'https://[2002:a00:1::1]/', /6to4/],
    ['Teredo', 'https://[2001:0:a00:1::1]/', /Teredo/],
    ['IPv4-translated', 'https://[::ffff:0:a00:1]/', /IPv4-translated/],
    ['segment routing', 'https://[5f00::1]/', /^is a segmentRouting address, not a public one \(5f00::1\)$/],
    ['an address outside the allowed range', 'https://10.0.0.1/', /private/, { allowHosts: ['127.0.0.0/8', 'localhost'] }]
  ]
  for (const [name, url, reason, policy] of refused) {
    test(`refuses ${name}`, () => {
      const refusal = checkTargetUrl(url, policy ?? none)
      assert.ok(refusal !== undefined, `${url} was accepted`)
      assert.match(refusal, reason)
    })
  }
})

describe('parseAllowHosts', () => {
  test('reads host names, addresses and ranges', () => {
    assert.deepEqual(parseAllowHosts(undefined), [])
    assert.deepEqual(parseAllowHosts(''), [])
    assert.deepEqual(parseAllowHosts(' , ,'), [])
    assert.deepEqual(
      parseAllowHosts(' LocalHost , hooks.internal.example,127.0.0.1, 127.0.0.0/8,::1/128, fd00::/8 ,my_service,10.0.0.7/32,,'),
      ['localhost', 'hooks.internal.example', '127.0.0.1', '127.0.0.0/8', '::1/128', 'fd00::/8', 'my_service', '10.0.0.7/32']
    )
  })

  const bad = [
    'https://example.com', 'example.com:8080', 'user@example.com', '10.0.0.0/33', '::1/129', '10.0.0.0/', '/8',
    '10.0.0.0/8/8', '10.0.0.0/x', '300.1.1.1', '127.1', '0x7f.0.0.1', '1234', 'foo.123', '-bad.example', 'a..b',
    'exa mple.com', '[::1]', 'fe80::1%eth0', `${'a'.repeat(64)}.example`
  ]
  for (const entry of bad) {
    test(`refuses ${JSON.stringify(entry)}, naming it`, () => {
      assert.throws(() => parseAllowHosts(`localhost, ${entry}`), (error: Error) => {
        assert.match(error.message, /WEBHOOK_ALLOW_HOSTS/)
        assert.ok(error.message.includes(`"${entry}"`), error.message)
        return true
      })
    })
  }
})

describe('checkTarget', () => {
  test('refuses a name that resolves to loopback, unless it is allowed', async () => {
    assert.match(await checkTarget('https://localhost/hooks', none) ?? '', /^resolves to a loopback address$/)
    assert.equal(await checkTarget('https://localhost/hooks', { allowHosts: ['localhost'] }), undefined)
    assert.equal(await checkTarget('http://localhost/hooks', { allowHosts: ['localhost'] }), undefined)
  })

  test('allowing the addresses a name resolves to allows the name', async () => {
    assert.equal(await checkTarget('https://localhost/hooks', { allowHosts: ['127.0.0.0/8', '::1'] }), undefined)
    // ...but only over https: http is for hosts that are allowed themselves.
    assert.equal(await checkTarget('http://localhost/hooks', { allowHosts: ['127.0.0.0/8', '::1'] }), 'must use https')
  })

  test('refuses a name that does not resolve', async () => {
    assert.equal(await checkTarget('https://no-such-host.invalid/hooks', none), 'does not resolve')
  })

  test('gives the URL check first, and checks literals without DNS', async () => {
    assert.equal(await checkTarget('http://localhost/', none), 'must use https')
    assert.match(await checkTarget('https://10.0.0.1/', none) ?? '', /^is a private address \(10\.0\.0\.1\)$/)
    assert.equal(await checkTarget('https://93.184.215.14/', none), undefined)
    assert.equal(await checkTarget('http://10.0.0.1/', { allowHosts: ['10.0.0.0/8'] }), undefined)
  })
})

describe('deliveryAgent', () => {
  // A receiver on loopback: what an internal service looks like from the delivery's side.
  async function receiver () {
    let connections = 0
    let requests = 0
    const server = createServer((_request, response) => {
      requests++
      response.end('received')
    })
    server.on('connection', () => { connections++ })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return {
      port: (server.address() as AddressInfo).port,
      get connections () { return connections },
      get requests () { return requests },
      async close () {
        server.closeAllConnections()
        server.close()
        await once(server, 'close')
      }
    }
  }

  function refusal (error: unknown): TargetRefusedError | undefined {
    for (let current = error; current instanceof Error; current = current.cause) {
      if (current instanceof TargetRefusedError) return current
      if (current instanceof AggregateError) {
        const inner = current.errors.find((each) => each instanceof TargetRefusedError) as TargetRefusedError | undefined
        if (inner !== undefined) return inner
      }
    }
    return undefined
  }

  async function assertRefused (url: string, policy: TargetPolicy, address: RegExp) {
    const agent = await deliveryAgent(policy)
    try {
      const error = await request(url, { method: 'POST', body: '{}', dispatcher: agent }).then(
        () => assert.fail(`${url} was delivered to`),
        (error: unknown) => error
      )
      const refused = refusal(error)
      assert.ok(refused !== undefined, `not a refusal: ${String(error)}`)
      assert.equal(refused.code, 'WEBHOOK_TARGET_REFUSED')
      assert.match(refused.message, address)
    } finally {
      await agent.close()
    }
  }

  test('refuses a loopback address literal before connecting', async () => {
    const target = await receiver()
    try {
      await assertRefused(`http://127.0.0.1:${target.port}/hooks`, none, /127\.0\.0\.1.*loopback/)
      await assertRefused(`http://[::ffff:127.0.0.1]:${target.port}/hooks`, none, /::ffff:7f00:1.*loopback/)
      assert.equal(target.connections, 0)
    } finally {
      await target.close()
    }
  })

  test('refuses a name that resolves to loopback, though no URL check ran (DNS rebinding)', async () => {
    const target = await receiver()
    try {
      await assertRefused(`http://localhost:${target.port}/hooks`, none, /(127\.0\.0\.1|::1) \(resolved from localhost\).*loopback/)
      // A range allowing other addresses does not allow this one.
      await assertRefused(`http://localhost:${target.port}/hooks`, { allowHosts: ['10.0.0.0/8'] }, /resolved from localhost/)
      assert.equal(target.connections, 0)
    } finally {
      await target.close()
    }
  })

  test('refuses through the single-address form of the lookup too', async () => {
    // Without address family selection Node asks the lookup for one address instead of all.
    const before = getDefaultAutoSelectFamily()
    setDefaultAutoSelectFamily(false)
    const target = await receiver()
    try {
      await assertRefused(`http://localhost:${target.port}/hooks`, none, /resolved from localhost/)
      assert.equal(target.connections, 0)
      const agent = await deliveryAgent({ allowHosts: ['127.0.0.1', '::1'] })
      try {
        const response = await request(`http://localhost:${target.port}/hooks`, { dispatcher: agent })
        assert.equal(await response.body.text(), 'received')
      } finally {
        await agent.close()
      }
    } finally {
      setDefaultAutoSelectFamily(before)
      await target.close()
    }
  })

  test('delivers to an address the allow-list names, or inside a range it names', async () => {
    const target = await receiver()
    try {
      for (const allowHosts of [['127.0.0.1'], ['127.0.0.0/8'], ['127.0.0.1', '::1']]) {
        const agent = await deliveryAgent({ allowHosts })
        try {
          const url = allowHosts.length === 1 ? `http://127.0.0.1:${target.port}/hooks` : `http://localhost:${target.port}/hooks`
          const response = await request(url, { method: 'POST', body: '{}', dispatcher: agent })
          assert.equal(response.statusCode, 200)
          assert.equal(await response.body.text(), 'received')
        } finally {
          await agent.close()
        }
      }
      assert.equal(target.requests, 3)
    } finally {
      await target.close()
    }
  })

  test('delivers to a host name the allow-list names, wherever it resolves', async () => {
    const target = await receiver()
    const agent = await deliveryAgent({ allowHosts: ['localhost'] })
    try {
      const response = await request(`http://localhost:${target.port}/hooks`, { method: 'POST', body: '{}', dispatcher: agent })
      assert.equal(response.statusCode, 200)
      assert.equal(await response.body.text(), 'received')
    } finally {
      await agent.close()
      await target.close()
    }
  })

  test('does not follow a redirect into the network', async () => {
    const target = await receiver()
    const redirector = createServer((_request, response) => {
      response.writeHead(307, { location: `http://127.0.0.1:${target.port}/internal` }).end()
    })
    redirector.listen(0, '127.0.0.2')
    await once(redirector, 'listening')
    const agent = await deliveryAgent({ allowHosts: ['127.0.0.2'] })
    try {
      const port = (redirector.address() as AddressInfo).port
      const response = await request(`http://127.0.0.2:${port}/hooks`, { method: 'POST', body: '{}', dispatcher: agent })
      assert.equal(response.statusCode, 307)
      await response.body.dump()
      assert.equal(target.connections, 0)
    } finally {
      await agent.close()
      redirector.closeAllConnections()
      redirector.close()
      await once(redirector, 'close')
      await target.close()
    }
  })
})
