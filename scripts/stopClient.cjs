#!/usr/bin/env node
// On-call's emergency stop of one client (docs/runbook.md, "Stop one client"): puts the client on the
// stop list (StoppedClients), so the service refuses its tokens (401 ERR_AUTH_STOPPED_CLIENT) within 5
// minutes, tokens already issued included, whatever its Partners row says. Run by the stop-client workflow
// (.github/workflows/stop-client.yml) as the environment's stop identity, on the environment's runner:
// inside its network when its storage is closed.
//
// Two requests, Get Entity of the client's Partners row, then Insert Entity of its stop-list row, signed in
// as the Azure CLI is; why these, and how storage's answers are read: docs/decisions/0200-the-emergency-stop-is-one-insert-entity-through-the-sdk.md.
// Lifting a stop is a reviewed change of the parameters file (docs/deploy.md, section 7), never this script.
//
// Usage: node scripts/stopClient.cjs <dev|prod> <client application id>
//   TABLES_ENDPOINT  the account's table endpoint, when not https://<account>.table.<the Azure CLI cloud's
//                    storage suffix> (Azurite over TLS, a test): https, as the SDK sends a bearer token only so
// Exit 0: stopped, or already stopped; 1: refused or failed (nothing changed, or the outcome named); 2: usage.
'use strict';
const { execFileSync } = require('node:child_process');
const { appendFileSync, readFileSync } = require('node:fs');
const { join } = require('node:path');
const { URL } = require('node:url');

/** A client application id: a GUID, strictly (the workflow checks the same before any runner of the network). */
const CLIENT_ID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const ROOT = join(__dirname, '..');

function fail(lines, code = 1) {
  process.stderr.write(`${lines.join('\n')}\n`);
  process.exit(code);
}

/** The environment's target (scripts/target.sh, which refuses a file with placeholders) as name → value. */
function target(env) {
  let text;
  try {
    text = execFileSync('bash', [join(__dirname, 'target.sh'), env], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    fail([String(error.stderr ?? error.message).trim(), 'nothing changed']);
  }
  return Object.fromEntries(
    text.split('\n').flatMap((line) => (line.includes('=') ? [[line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]] : [])),
  );
}

/** The tables' names and the runner group, from the environment's files (for the messages below). */
function files(env) {
  const parameters = JSON.parse(readFileSync(join(ROOT, 'infra', 'env', `${env}.parameters.json`), 'utf8')).parameters;
  const name = (parameter, fallback) => (parameters[parameter] === undefined ? fallback : parameters[parameter].value);
  const group = JSON.parse(readFileSync(join(ROOT, 'infra', 'env', `${env}.pipeline.json`), 'utf8')).privateRunnerGroup || undefined;
  return { partners: name('partnersTableName', 'Partners'), stops: name('stoppedClientsTableName', 'StoppedClients'), group };
}

/** The account's table endpoint: TABLES_ENDPOINT, else the signed-in Azure CLI's cloud's name for it. */
function tablesEndpoint(account) {
  if (process.env.TABLES_ENDPOINT) return new URL(process.env.TABLES_ENDPOINT);
  let suffix;
  try {
    suffix = execFileSync('az', ['cloud', 'show', '--query', 'suffixes.storageEndpoint', '--output', 'tsv'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (error) {
    fail([`the Azure CLI's cloud could not be read (az cloud show: ${String(error.stderr ?? error.message).trim()}); nothing changed`]);
  }
  return new URL(`https://${account}.table.${suffix}`);
}

/** Storage's error code (its x-ms-error-code, which @azure/data-tables gives as details.errorCode), else the error's own. */
const codeOf = (error) => error.details?.errorCode ?? error.code;

/** What went wrong, with the fix where storage's answer names it (its status and error code, never its text). */
function explain(error, { account, env, group }) {
  const code = codeOf(error);
  const text = error.details?.odataError?.message?.value ?? String(error.message).split('\n')[0];
  const lines = [`  ${[error.statusCode, code ?? error.name].filter((part) => part !== undefined).join(' ')}: ${text}`];
  if (code === 'AuthorizationFailure' && group !== undefined)
    lines.push(
      `  ${account} answers only inside ${env}'s network: run the stop-client workflow, whose job runs on the runner group ${group} (privateRunnerGroup of infra/env/${env}.pipeline.json)`,
    );
  if (code === 'AuthorizationPermissionMismatch')
    lines.push(
      `  is this the stop identity, granted the stop list and a read of the Partners table (the deployment grants stopPrincipalId of infra/env/${env}.pipeline.json)?`,
    );
  if (error.name === 'CredentialUnavailableError')
    lines.push('  sign the Azure CLI in first: azure/login as the stop identity in the workflow, az login by hand');
  return lines;
}

async function main(argv) {
  const [env, given] = argv;
  if (!['dev', 'prod'].includes(env) || argv.length !== 2) fail(['usage: node scripts/stopClient.cjs <dev|prod> <client application id>'], 2);
  // Strictly a GUID, before anything else: the id becomes a table key and a log line. The value given is
  // not echoed back (a workflow input printed verbatim could hold a workflow command).
  if (!CLIENT_ID.test(given))
    fail(
      [
        'refused, nothing changed: ERR_STOP_CLIENT_ID: the client id given is not a client application id (a GUID: 8-4-4-4-12 hexadecimal digits, e.g. 0b9f3c52-1111-4222-8333-944455556666)',
      ],
      2,
    );
  // Entra writes application ids in lower case, and the Partners rows are keyed by them as written.
  const client = given.toLowerCase();
  const account = target(env).storageAccountName;
  const { partners, stops, group } = files(env);
  const endpoint = tablesEndpoint(account);
  if (endpoint.protocol !== 'https:') fail([`TABLES_ENDPOINT ${endpoint.origin} is not https: a bearer token is sent over TLS only; nothing changed`]);
  const context = { account, env, group };

  // Loaded only once the id is known good: a refusal needs no package.
  const { TableClient } = require('@azure/data-tables');
  const { AzureCliCredential } = require('@azure/identity');
  const credential = new AzureCliCredential({ processTimeoutInMs: 60_000 });
  const options = { retryOptions: { maxRetries: 2 } };
  const url = endpoint.href.replace(/\/$/, '');
  console.log(`stopping client ${client} in ${env}: ${account}, table ${stops}`);

  let row;
  try {
    row = await new TableClient(url, partners, credential, options).getEntity(client, '', { queryOptions: { select: ['PartnerId'] } });
  } catch (error) {
    if (error.statusCode === 404 && codeOf(error) === 'ResourceNotFound')
      fail([
        `refused, nothing changed: ERR_STOP_NO_ROW: client ${client} has no Partners row in ${env}: it is no partner's client here (check the id and the environment); nothing is written`,
      ]);
    fail([...explain(error, context), `the Partners row of ${client} could not be read; nothing changed`]);
  }
  const partner = row.PartnerId ?? '-';

  // Who stopped it, for the lift: the workflow run, or a person's local run.
  const stopId = process.env.GITHUB_RUN_ID || `local-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`;
  const stopRow = {
    partitionKey: client,
    rowKey: '',
    StopId: stopId,
    StoppedBy: process.env.GITHUB_ACTOR || process.env.USER || 'unknown',
    StoppedAt: { value: new Date().toISOString(), type: 'DateTime' },
  };
  try {
    await new TableClient(url, stops, credential, options).createEntity(stopRow);
  } catch (error) {
    if (error.statusCode === 409 && codeOf(error) === 'EntityAlreadyExists') {
      console.log(`already stopped: client ${client} (partner ${partner}) is on the stop list of ${env}; nothing changed`);
      return;
    }
    // Storage refused it (4xx): nothing was written. No answer (a timeout, a lost connection): it may have been.
    const refused = typeof error.statusCode === 'number' && error.statusCode < 500;
    fail([
      ...explain(error, context),
      refused
        ? `client ${client} was not stopped; nothing changed`
        : `whether client ${client} was stopped is not known: run the stop again (a client already stopped is reported so)`,
    ]);
  }

  console.log(`stopped: client ${client} (partner ${partner}) in ${env}: on the stop list as stop ${stopId}`);
  console.log('  its tokens are refused (401 ERR_AUTH_STOPPED_CLIENT) within 5 minutes, tokens already issued included');
  console.log(`  a deployment does not undo it; to lift it, a reviewed change adds "liftStop": "${stopId}"`);
  console.log(`  to client ${client}'s entry in infra/env/${env}.parameters.json (docs/deploy.md, section 7)`);
  if (process.env.GITHUB_STEP_SUMMARY)
    appendFileSync(
      process.env.GITHUB_STEP_SUMMARY,
      [
        `### Client ${client} stopped in ${env}`,
        '',
        `Partner \`${partner}\`: on the stop list of \`${account}\`/\`${stops}\` as stop \`${stopId}\`. Its tokens are refused within 5 minutes.`,
        '',
        `A deployment does not undo it. **To lift it**, a reviewed change adds \`"liftStop": "${stopId}"\` to this client's entry in \`infra/env/${env}.parameters.json\`.`,
        '',
      ].join('\n'),
    );
}

if (require.main === module)
  main(process.argv.slice(2)).catch((error) => fail([`the stop failed: ${error.stack ?? error}`, 'whether the client was stopped is not known: run it again']));
module.exports = { CLIENT_ID };
