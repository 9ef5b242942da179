/**
 * How a client proves who it is locally and in the example: the certificates `npm start` keeps
 * (dev/localCertificates.ts) and the example client's credential settings (examples/submit-draws.ts).
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { clientCertificate, localCertificateAuthority, loopbackServerCertificate } from '../../dev/localCertificates';
import { ConfigurationError, configFromEnv } from '../../examples/submit-draws';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'local-certificates-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the kept local certificates', () => {
  test('two processes starting together on a new machine agree on one CA and one client certificate, kept for the next run', async () => {
    const [a, b] = await Promise.all([localCertificateAuthority(dir), localCertificateAuthority(dir)]);
    expect(a.cert).toBe(b.cert);
    expect(readFileSync(a.certPath, 'utf8')).toBe(a.cert);
    const [c, d] = await Promise.all([clientCertificate('demo-partner', dir), clientCertificate('demo-partner', dir)]);
    expect(c.thumbprintSha256).toBe(d.thumbprintSha256);
    expect(readdirSync(dir).sort()).toEqual(['ca', 'demo-partner']); // no staging copies left behind
    expect((await localCertificateAuthority(dir)).cert).toBe(a.cert);
    expect(readFileSync(c.combinedPath, 'utf8')).toBe(c.key + c.cert);
  }, 30_000);

  test('the CA is a CA; the server certificate it issues is for the loopback names only and chains to it', async () => {
    const ca = await localCertificateAuthority(dir);
    const caCert = new X509Certificate(ca.cert);
    expect(caCert.ca).toBe(true);
    const server = new X509Certificate((await loopbackServerCertificate(ca)).cert);
    expect(server.ca).toBe(false);
    expect(server.checkIssued(caCert)).toBe(true);
    expect(server.verify(caCert.publicKey)).toBe(true);
    expect(server.subjectAltName).toBe('IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:localhost');
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkHost('example.com')).toBeUndefined();
  }, 30_000);

  test('a kept certificate within a day of its end is replaced, not handed out, once however many start together', async () => {
    const parent = join(dir, 'expiring');
    mkdirSync(join(parent, 'ca'), { recursive: true });
    const old = await generate([{ name: 'commonName', value: 'old' }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + 60 * 60 * 1000),
    });
    writeFileSync(join(parent, 'ca', 'key.pem'), old.private);
    writeFileSync(join(parent, 'ca', 'cert.pem'), old.cert);
    // Three processes renewing at once all hand out the one copy that ends up on disk.
    const [renewed, ...others] = await Promise.all([localCertificateAuthority(parent), localCertificateAuthority(parent), localCertificateAuthority(parent)]);
    expect(renewed.cert).not.toBe(old.cert);
    for (const other of others) expect(other.cert).toBe(renewed.cert);
    expect(Date.parse(new X509Certificate(renewed.cert).validTo)).toBeGreaterThan(Date.now() + 365 * 24 * 60 * 60 * 1000);
    expect(readFileSync(join(parent, 'ca', 'cert.pem'), 'utf8')).toBe(renewed.cert);
    expect(readdirSync(parent)).toEqual(['ca']);
  }, 30_000);

  test('the client certificate is not a CA and its thumbprint is the SHA-256 of the certificate', async () => {
    const client = await clientCertificate('demo-partner', dir);
    const cert = new X509Certificate(client.cert);
    expect(cert.ca).toBe(false);
    expect(client.thumbprintSha256).toBe(cert.fingerprint256.replaceAll(':', '').toLowerCase());
  });
});

describe("the example client's credential settings", () => {
  const remote = { DRAWS_BASE_URL: 'https://draws.example', DRAWS_TENANT_ID: '11111111-2222-4333-8444-555555555555' };
  const files = async () => {
    const client = await clientCertificate('demo-partner', dir);
    const other = await clientCertificate('other-partner', dir);
    const certOnly = join(dir, 'cert-only.pem');
    writeFileSync(certOnly, client.cert);
    return { client, other, certOnly };
  };
  const refusal = (env: Record<string, string>) => {
    try {
      configFromEnv(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      return (error as Error).message;
    }
    throw new Error('configFromEnv accepted the settings');
  };

  test('a certificate with its key, in one file or two, is used instead of any secret', async () => {
    const { client } = await files();
    const combined = configFromEnv({ ...remote, DRAWS_CLIENT_CERTIFICATE: client.combinedPath, DRAWS_CLIENT_SECRET: 'ignored' });
    expect(combined.clientSecret).toBeUndefined();
    expect(combined.clientCertificate).toEqual({ certificate: client.key + client.cert, privateKey: client.key + client.cert });
    const separate = configFromEnv({ ...remote, DRAWS_CLIENT_CERTIFICATE: client.certPath, DRAWS_CLIENT_CERTIFICATE_KEY: client.keyPath });
    expect(separate.clientCertificate).toEqual({ certificate: client.cert, privateKey: client.key });
  });

  test('each unusable certificate setting is refused by name, before anything is sent', async () => {
    const { client, other, certOnly } = await files();
    expect(refusal({ ...remote })).toMatch(/^set DRAWS_CLIENT_CERTIFICATE \(preferred\) or DRAWS_CLIENT_SECRET/);
    expect(refusal({ ...remote, DRAWS_CLIENT_CERTIFICATE_KEY: client.keyPath })).toBe('DRAWS_CLIENT_CERTIFICATE_KEY is set without DRAWS_CLIENT_CERTIFICATE');
    expect(refusal({ ...remote, DRAWS_CLIENT_CERTIFICATE: join(dir, 'missing.pem') })).toMatch(
      /^DRAWS_CLIENT_CERTIFICATE: cannot read .*missing\.pem \(ENOENT\)$/,
    );
    expect(refusal({ ...remote, DRAWS_CLIENT_CERTIFICATE: certOnly })).toMatch(/^DRAWS_CLIENT_CERTIFICATE: .*cert-only\.pem holds no PEM private key$/);
    expect(refusal({ ...remote, DRAWS_CLIENT_CERTIFICATE: client.keyPath, DRAWS_CLIENT_CERTIFICATE_KEY: client.keyPath })).toMatch(/holds no PEM certificate$/);
    expect(refusal({ ...remote, DRAWS_CLIENT_CERTIFICATE: client.certPath, DRAWS_CLIENT_CERTIFICATE_KEY: other.keyPath })).toBe(
      "DRAWS_CLIENT_CERTIFICATE: the private key is not the certificate's",
    );
  }, 30_000);
});
