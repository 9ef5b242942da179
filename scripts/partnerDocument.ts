/**
 * `npm run partner-document -- --host <host name> --tenant <tenant id> --app-id-uri <App ID URI>
 * [--login-endpoint <url>] [--out <file>]`: docs/openapi.yaml with one environment's values filled in
 * (its host as the server, the lender's tenant in the token URL, the API's scope), for the lender to
 * hand to partners, so that their generators and collections hold nothing to replace.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { ROOT } from './bundle';

export interface Environment {
  /** The function app's default host name. */
  readonly host: string;
  readonly tenantId: string;
  /** The API's App ID URI, `api://<application id>` as docs/deploy.md registers it. */
  readonly appIdUri: string;
  /** The cloud's Microsoft Entra endpoint (`az cloud show --query endpoints.activeDirectory`). */
  readonly loginEndpoint: string;
}

export const TEMPLATE = join(ROOT, 'docs', 'openapi.yaml');
const PLACEHOLDERS = /LENDER-TENANT-ID|LENDER-API-APP-ID/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** What is wrong with these values, or nothing. */
export function environmentProblems(env: Environment): string[] {
  const problems: string[] = [];
  if (!HOST.test(env.host)) problems.push(`--host must be a DNS host name (got "${env.host}")`);
  if (!GUID.test(env.tenantId)) problems.push(`--tenant must be the tenant id, a lower-case GUID (got "${env.tenantId}")`);
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^\s/]+(?:\/[^\s]*)?$/i.test(env.appIdUri) || env.appIdUri.endsWith('/')) {
    problems.push(`--app-id-uri must be the API's App ID URI without a trailing slash, such as api://<application id> (got "${env.appIdUri}")`);
  }
  if (!/^https:\/\/[^\s/]+\/?$/.test(env.loginEndpoint)) problems.push(`--login-endpoint must be an https origin (got "${env.loginEndpoint}")`);
  return problems;
}

/** The partner document (YAML text) for one environment, from the template's text. */
export function partnerDocument(template: string, env: Environment): string {
  const doc = parseDocument(template);
  const login = env.loginEndpoint.replace(/\/$/, '');
  doc.setIn(['servers', 0, 'variables', 'hostName', 'default'], env.host);
  doc.setIn(
    ['components', 'securitySchemes', 'entraClientCredentials', 'flows', 'clientCredentials', 'tokenUrl'],
    `${login}/${env.tenantId}/oauth2/v2.0/token`,
  );
  const scopes = ['components', 'securitySchemes', 'entraClientCredentials', 'flows', 'clientCredentials', 'scopes'];
  doc.setIn(scopes, { [`${env.appIdUri}/.default`]: 'All app roles granted to your client application.' });
  const description = String(doc.getIn(['info', 'description']));
  doc.setIn(
    ['info', 'description'],
    description.replace(
      /\n\nThe lender gives each partner[^]*$/,
      `\n\nThis document is for one environment: host ${env.host}, tenant ${env.tenantId}, scope ${env.appIdUri}/.default.\n`,
    ),
  );
  const securityDescription = ['components', 'securitySchemes', 'entraClientCredentials', 'description'];
  doc.setIn(
    securityDescription,
    String(doc.getIn(securityDescription)).replace(/ `LENDER-TENANT-ID` and\n`LENDER-API-APP-ID` stand for the values the lender gives you\./, ''),
  );
  const text = doc.toString({ lineWidth: 0 });
  if (PLACEHOLDERS.test(text)) throw new Error(`a placeholder is left: ${PLACEHOLDERS.exec(text)?.[0]}`);
  return text;
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      host: { type: 'string', default: '' },
      tenant: { type: 'string', default: '' },
      'app-id-uri': { type: 'string', default: '' },
      'login-endpoint': { type: 'string', default: 'https://login.microsoftonline.com/' },
      out: { type: 'string' },
    },
  });
  const env: Environment = { host: values.host, tenantId: values.tenant, appIdUri: values['app-id-uri'], loginEndpoint: values['login-endpoint'] };
  const problems = environmentProblems(env);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exit(2);
  }
  const text = partnerDocument(readFileSync(TEMPLATE, 'utf8'), env);
  if (values.out === undefined) process.stdout.write(text);
  else writeFileSync(values.out, text);
}
