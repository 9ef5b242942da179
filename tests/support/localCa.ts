/** A fetch that trusts the dev host's local CA, as a partner's process does with NODE_EXTRA_CA_CERTS. */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent } from 'undici';

const agents = new Map<string, Agent>();

export function trustingFetch(caCertPath: string): typeof fetch {
  let agent = agents.get(caCertPath);
  if (agent === undefined) {
    agent = new Agent({ connect: { ca: [...rootCertificates, readFileSync(caCertPath, 'utf8')] } });
    agents.set(caCertPath, agent);
  }
  const dispatcher = agent;
  return (input, init) => fetch(input, { ...init, dispatcher });
}
