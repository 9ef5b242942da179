/**
 * Preloaded into a partner's process (`node --require`) by tests/integration/microsoftClients.test.ts,
 * so that MSAL Node and Azure Identity, unmodified, meet the local Entra stand-in where they would meet
 * Entra:
 *
 * ENTRA_AT=<port>: TLS connections to login.microsoftonline.com:443 go to 127.0.0.1:<port> instead, as
 * if the name resolved to this machine. The libraries treat that host as Entra itself (endpoints they
 * know without asking), which an authority on 127.0.0.1 is not; the TLS handshake still names and
 * verifies login.microsoftonline.com (a certificate from the local CA, trusted by NODE_EXTRA_CA_CERTS).
 * Both libraries' HTTP stacks open TLS through `tls.connect` (undici's fetch in MSAL Node, node:https
 * in Azure Identity's pipeline). Any other host is refused, so nothing of a test leaves the machine.
 *
 * CLOCK_SKEW_MS=<ms>: the process's clock (Date) runs that far from the machine's, as a partner's
 * unsynchronised server does; the client assertion the library signs then carries those times.
 */
'use strict';
const tls = require('node:tls');

const ENTRA = 'login.microsoftonline.com';
const port = Number(process.env.ENTRA_AT);
if (process.env.ENTRA_AT !== undefined) {
  const connect = tls.connect;
  tls.connect = function redirected(...args) {
    const options = args[0];
    if (typeof options !== 'object' || options === null) throw new Error('entraHost.cjs: tls.connect(port, host, …) is not redirected');
    const host = options.host ?? options.servername;
    if (host === ENTRA && Number(options.port ?? 443) === 443) {
      return connect.call(this, { ...options, host: '127.0.0.1', port, servername: ENTRA }, ...args.slice(1));
    }
    if (host === '127.0.0.1' || host === 'localhost') return connect.apply(this, args);
    throw new Error(`entraHost.cjs: a connection to ${host} would leave this machine`);
  };
}

const skew = Number(process.env.CLOCK_SKEW_MS ?? 0);
if (skew !== 0) {
  const RealDate = Date;
  // `new Date()` and `Date.now()` read the skewed clock; a Date of a given time is that time.
  globalThis.Date = class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + skew);
      else super(...args);
    }
    static now() {
      return RealDate.now() + skew;
    }
  };
}
