/**
 * The certificates of a local run, kept under `.local/certificates/` (git-ignored) so that a path
 * printed once stays good across runs: a certificate authority that issues the embedded identity
 * provider's HTTPS certificate (what clients trust with NODE_EXTRA_CA_CERTS or curl's --cacert), and
 * the demo partner's client certificate (its private key signs client assertions, as a partner's does
 * with Entra ID). Nothing here is of Azure; a new machine creates its own on first start.
 */
import { X509Certificate, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { generate } from 'selfsigned';
import { Agent } from 'undici';

/** The repository's top folder: the nearest one up holding package.json (this file runs from dev/ under ts-jest, dist/dev/ compiled). */
function repositoryRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}

/** `.local/certificates` at the top of the repository (git-ignored). */
export const DEFAULT_CERTIFICATES_DIR = join(repositoryRoot(), '.local', 'certificates');

export interface KeptCertificate {
  /** PEM private key (PKCS #8). */
  readonly key: string;
  /** PEM certificate. */
  readonly cert: string;
  readonly keyPath: string;
  readonly certPath: string;
  /** The key and the certificate in one file, as Azure Identity's `certificatePath` takes them. */
  readonly combinedPath: string;
  /** SHA-256 thumbprint of the certificate, lower-case hex (MSAL's `thumbprintSha256`). */
  readonly thumbprintSha256: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function thumbprintOf(cert: string): string {
  return new X509Certificate(cert).fingerprint256.replaceAll(':', '').toLowerCase();
}

const filesIn = (dir: string) => ({ keyPath: join(dir, 'key.pem'), certPath: join(dir, 'cert.pem'), combinedPath: join(dir, 'client.pem') });

/** The copy kept in `dir`; 'expiring' within a day of its end, when it is replaced rather than handed out. */
async function readKept(dir: string): Promise<KeptCertificate | 'absent' | 'expiring'> {
  const { keyPath, certPath, combinedPath } = filesIn(dir);
  try {
    const [key, cert] = await Promise.all([readFile(keyPath, 'utf8'), readFile(certPath, 'utf8')]);
    if (Date.parse(new X509Certificate(cert).validTo) - Date.now() < DAY_MS) return 'expiring';
    return { key, cert, keyPath, certPath, combinedPath, thumbprintSha256: thumbprintOf(cert) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw error;
  }
}

const LOCK_WAIT_MS = 30_000;
const LOCK_STALE_MS = 60_000;

/**
 * Holds `path` (a directory: creating one is atomic) while `work` runs, so that processes starting
 * together (parallel test workers, a second `npm start`) take turns. A lock older than a minute is
 * left by a process that died holding it, and is taken over.
 */
async function holding<T>(path: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await mkdir(path);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = await stat(path).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > LOCK_STALE_MS) await rm(path, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${path} is held by another process for more than ${LOCK_WAIT_MS / 1000} s`, { cause: error });
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    return await work();
  } finally {
    await rm(path, { recursive: true, force: true });
  }
}

/**
 * The key pair and certificate kept in `dir/name`, created when absent or expiring. Written in a
 * staging directory and renamed into place, under a lock, so that no process ever reads half a copy
 * or hands out a certificate that is not the one on disk.
 */
async function kept(parent: string, name: string, create: () => Promise<{ key: string; cert: string }>): Promise<KeptCertificate> {
  const dir = join(parent, name);
  const existing = await readKept(dir);
  if (typeof existing !== 'string') return existing;
  await mkdir(parent, { recursive: true });
  return holding(join(parent, `.${name}.lock`), async () => {
    // Another process may have written it while this one waited.
    const current = await readKept(dir);
    if (typeof current !== 'string') return current;
    const { key, cert } = await create();
    const staging = join(parent, `.${name}-${randomUUID()}`);
    await mkdir(staging, { mode: 0o700 });
    await writeFile(join(staging, 'key.pem'), key, { mode: 0o600 });
    await writeFile(join(staging, 'cert.pem'), cert);
    await writeFile(join(staging, 'client.pem'), key + cert, { mode: 0o600 });
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
    return { key, cert, ...filesIn(dir), thumbprintSha256: thumbprintOf(cert) };
  });
}

const YEARS = (n: number) => new Date(Date.now() + n * 365 * DAY_MS);

/** The local certificate authority: trusted by nothing unless a client is told to trust it. */
export function localCertificateAuthority(dir = DEFAULT_CERTIFICATES_DIR): Promise<KeptCertificate> {
  return kept(dir, 'ca', async () => {
    const pems = await generate([{ name: 'commonName', value: 'Draw Request Service local development CA' }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: YEARS(5),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    return { key: pems.private, cert: pems.cert };
  });
}

/** A demo client's certificate: what a partner uploads to its Entra application, and the key it signs assertions with. */
export function clientCertificate(clientId: string, dir = DEFAULT_CERTIFICATES_DIR): Promise<KeptCertificate> {
  return kept(dir, clientId, async () => {
    const pems = await generate([{ name: 'commonName', value: clientId }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: YEARS(2),
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
      ],
    });
    return { key: pems.private, cert: pems.cert };
  });
}

/** An HTTPS certificate for this machine's loopback names, issued by `ca` for this run only (never written). */
export async function loopbackServerCertificate(ca: KeptCertificate): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 30 * DAY_MS),
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/** A fetch that trusts `caCert` besides Node's own roots, as a process told NODE_EXTRA_CA_CERTS does; nothing process-wide changes. */
export function fetchTrusting(caCert: string): { readonly fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ connect: { ca: [...rootCertificates, caCert] } });
  return { fetch: (input, init) => fetch(input, { ...init, dispatcher: agent }), close: () => agent.close() };
}
