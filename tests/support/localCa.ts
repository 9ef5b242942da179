/** A fetch that trusts the dev host's local CA, as a partner's process does with NODE_EXTRA_CA_CERTS. */
import { readFileSync } from 'node:fs';
import { fetchTrusting } from '../../dev/localCertificates';

/** One per CA file, kept for the test file's life (its agent's connections are reused). */
const fetches = new Map<string, typeof fetch>();

export function trustingFetch(caCertPath: string): typeof fetch {
  let trusted = fetches.get(caCertPath);
  if (trusted === undefined) {
    trusted = fetchTrusting(readFileSync(caCertPath, 'utf8')).fetch;
    fetches.set(caCertPath, trusted);
  }
  return trusted;
}
