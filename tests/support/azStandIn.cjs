#!/usr/bin/env node
// A recording stand-in for the Azure CLI (`az`), for the pipeline tests (tests/integration/pipeline.test.ts).
// It answers the calls scripts/deploy.sh makes as the CLI would (its --query is real JMESPath, its
// --output tsv the CLI's), keeps what a deployment would leave behind in a state file, and appends every
// call, with who is signed in, to a log. Any other call fails, so a new call cannot go unnoticed.
//
// AZ_STATE: JSON file { signedIn: { name, type }, functionAppUrl, groups: [], deployments: { group: [] },
//           tokens: { <access token>: { client, scope or resource } } (the tokens it issued), tables: { <account>/<table>:
//           { <PartitionKey>: { property: value } } } (the rows it inserted or merged); both for the test's function app;
//           storage: { <account>: { publicNetworkAccess, defaultAction, privateNetwork } } (as the last deployment left it),
//           tableAccess?: { <signed-in name>: { <account>/<table>: [Table service operations its roles allow] } }
//           (tests/support/tableRbac.ts works them out from infra/'s role assignments; when given, every
//           table call of anyone is refused as Azure refuses it unless the operation is listed),
//           federatedCredentials?: { <identity name>: [{ name, issuer, subject, audiences }] } (the bootstrap's) }
//           signedIn null: nobody is signed in, and every call fails as the CLI does.
// AZ_LOG:   one JSON line per call: { args, as, cwd, sha256? }
// AZ_CALLER_NETWORK: the virtual network the caller runs in (a private-networked runner's), if any.
// AZ_WARNING: a line every call writes on stderr first, as the CLI writes warnings (an available upgrade, a
//             deprecation, Python's own) whatever its exit code and output.
const { createHash } = require('node:crypto');
const { appendFileSync, existsSync, readFileSync, writeFileSync } = require('node:fs');
const { resolve } = require('node:path');
const jmespath = require('jmespath');
const { REFUSALS, etagOf, refusal, typed } = require('./storageAccess.cjs');

const args = process.argv.slice(2);
if (process.env.AZ_WARNING) process.stderr.write(`${process.env.AZ_WARNING}\n`);
const state = JSON.parse(readFileSync(process.env.AZ_STATE, 'utf8'));
const entry = { args, as: state.signedIn?.name ?? null, cwd: process.cwd() };
const save = () => writeFileSync(process.env.AZ_STATE, JSON.stringify(state, null, 1));
const log = () => appendFileSync(process.env.AZ_LOG, `${JSON.stringify(entry)}\n`);

/** The value after `--name` (the last one when repeated), or every value after each `--name`. */
const option = (name) => {
  const i = args.lastIndexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const values = (name) => {
  const found = [];
  args.forEach((a, i) => {
    if (a !== name) return;
    for (let j = i + 1; j < args.length && !args[j].startsWith('--'); j++) found.push(args[j]);
  });
  return found;
};
const command = args
  .filter((a, i) => !a.startsWith('-') && (i === 0 || !args[i - 1].startsWith('-')))
  .slice(0, 3)
  .join(' ');
const fail = (message) => {
  log();
  process.stderr.write(`az stand-in: ${message}\n`);
  process.exit(1);
};

/** The CLI's tsv: one line per row, tab between columns; Python's True/False for booleans. */
function tsv(value) {
  const cell = (v) =>
    v === null || v === undefined ? '' : typeof v === 'boolean' ? (v ? 'True' : 'False') : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const row = (v) => (Array.isArray(v) ? v.map(cell).join('\t') : v !== null && typeof v === 'object' ? Object.values(v).map(cell).join('\t') : cell(v));
  if (value === null || value === undefined) return '';
  return Array.isArray(value) ? value.map(row).join('\n') : row(value);
}
function answer(data) {
  const query = option('--query');
  const result = query === undefined ? data : jmespath.search(data, query);
  log();
  const output = option('--output') ?? option('-o');
  if (output === 'none') return;
  const text = output === 'tsv' ? tsv(result) : JSON.stringify(result, null, 2);
  if (text !== '') process.stdout.write(`${text}\n`);
}

/** What infra/main.bicep would output for this parameters file and these name=value parameters (names as its modules build them). */
function outputsFor(parametersFile, inline) {
  const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')).parameters;
  const env = parameters.environmentName.value;
  const value = (name, fallback) => inline[name] ?? (parameters[name] === undefined ? fallback : parameters[name].value);
  // The smoke identity is granted and registered as one more partner (main.bicep, smokePartners).
  const smoke = value('smokeClientAppId', '') === '' ? [] : [{ clientAppId: value('smokeClientAppId'), partnerId: value('smokePartnerId') }];
  const outputs = {
    functionAppName: `func-drawreq-${env}-abc123`,
    functionAppUrl: state.functionAppUrl,
    storageAccountName: `stdrawreq${env}abc123`,
    partnersTableName: value('partnersTableName', 'Partners'),
    stoppedClientsTableName: value('stoppedClientsTableName', 'StoppedClients'),
    apiAppId: `api-app-id-${env}`,
    apiIdentifierUri: `api://api-app-id-${env}`,
    networkIsolated: value('networkIsolated', false),
    storageClosed: value('networkIsolated', false) && !value('storagePublicAccess', true),
    partnerRows: [...value('partners', []), ...smoke].map((p) => ({
      clientId: p.clientAppId,
      partnerId: p.partnerId,
      active: p.active ?? true,
      liftStop: p.liftStop ?? '',
    })),
  };
  return Object.fromEntries(
    Object.entries(outputs).map(([k, v]) => [k, { type: Array.isArray(v) ? 'Array' : typeof v === 'boolean' ? 'Bool' : 'String', value: v }]),
  );
}

function templateCall() {
  const template = option('--template-file');
  const given = values('--parameters');
  const parameterFiles = given.filter((p) => p.startsWith('@'));
  if (template === undefined || !existsSync(resolve(template))) fail(`no template file ${template}`);
  if (parameterFiles.length !== 1 || !existsSync(resolve(parameterFiles[0].slice(1)))) fail(`no parameters file in ${parameterFiles}`);
  const inline = Object.fromEntries(given.filter((p) => !p.startsWith('@')).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
  return { parametersFile: resolve(parameterFiles[0].slice(1)), inline };
}

/**
 * Entra's answer to a client-credentials request for `<App ID URI>/.default`: the API must be deployed,
 * and (appRoleAssignmentRequired) the caller granted its role, which the deployment's partner rows are.
 */
function accessToken(scope) {
  const deployed = Object.values(state.deployments)
    .flat()
    .filter((d) => d.properties.provisioningState === 'Succeeded' && `${d.properties.outputs.apiIdentifierUri?.value}/.default` === scope);
  if (deployed.length === 0) fail(`AADSTS500011: The resource principal named ${scope.replace(/\/\.default$/, '')} was not found in the tenant`);
  if (state.signedIn.type !== 'servicePrincipal') fail(`AADSTS65001: The user or administrator has not consented to use the application`);
  const granted = deployed.some((d) => d.properties.outputs.partnerRows.value.some((row) => row.clientId === state.signedIn.name));
  if (!granted) fail(`AADSTS501051: Application '${state.signedIn.name}' is not assigned to a role for the application '${scope}'`);
  const token = Buffer.from(JSON.stringify({ client: state.signedIn.name, scope, n: Object.keys(state.tokens ?? {}).length })).toString('base64url');
  state.tokens = { ...state.tokens, [token]: { client: state.signedIn.name, scope } };
  save();
  return { accessToken: token, expiresOn: '2026-11-26 12:00:00.000000', expires_on: 1795694400, tokenType: 'Bearer' };
}

/**
 * Microsoft Entra's token for a resource (`--resource`, as Azure Identity's AzureCliCredential asks for
 * https://storage.azure.com): JWT-shaped, unsigned, with the claims a storage service checks (issuer,
 * audience, lifetime: what Azurite's OAuth "basic" reads), recorded as the signed-in identity's.
 */
function resourceToken(resource) {
  const now = Math.floor(Date.now() / 1000);
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = { aud: resource, iss: 'https://sts.windows.net/tenant-id/', iat: now - 60, nbf: now - 60, exp: now + 3600, appid: state.signedIn.name };
  const token = `${part({ alg: 'none', typ: 'JWT' })}.${part({ ...claims, n: Object.keys(state.tokens ?? {}).length })}.`;
  state.tokens = { ...state.tokens, [token]: { client: state.signedIn.name, resource } };
  save();
  return { accessToken: token, expiresOn: new Date((now + 3600) * 1000).toISOString(), expires_on: now + 3600, tokenType: 'Bearer' };
}

/**
 * A data-plane call from this machine, as Azure Storage decides it (tests/support/storageAccess.cjs): the
 * account's network (the caller's is AZ_CALLER_NETWORK), then the signed-in identity's permission for the
 * Table service operation.
 */
function authorize(operation) {
  const code = refusal(state, {
    account: option('--account-name'),
    table: option('--table-name') ?? option('--name'),
    network: process.env.AZ_CALLER_NETWORK,
    who: state.signedIn.name,
    operation,
  });
  if (code !== undefined) fail(`${REFUSALS[code]}\nErrorCode:${code}`);
}
/** The table an entity command names (--account-name, --table-name). */
const entityTable = () => `${option('--account-name')}/${option('--table-name')}`;
/** The row at `partitionKey` of `table` if its RowKey is `rowKey`; else the service's ResourceNotFound. */
function existingRow(table, partitionKey, rowKey) {
  const row = state.tables?.[table]?.[partitionKey];
  if (row === undefined || row.RowKey !== rowKey) fail('The specified resource does not exist.\nErrorCode:ResourceNotFound');
  return row;
}
/** --entity name=value pairs, as given (values are strings; name@odata.type gives a value's type). */
const entityGiven = () => Object.fromEntries(values('--entity').map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));

if (state.signedIn === null) fail("Please run 'az login' to setup account.");
switch (command) {
  case 'identity federated-credential list': {
    const found = state.federatedCredentials?.[option('--identity-name')];
    if (found === undefined)
      fail(
        `(ResourceNotFound) The Resource 'Microsoft.ManagedIdentity/userAssignedIdentities/${option('--identity-name')}' under resource group '${option('--resource-group')}' was not found.`,
      );
    answer(found.map(({ name, issuer, subject, audiences }) => ({ name, issuer, subject, audiences })));
    break;
  }
  case 'account show':
    answer({ name: 'Draw Requests', id: '11111111-2222-4333-8444-555555555555', user: state.signedIn });
    break;
  case 'account get-access-token':
    answer(option('--resource') === undefined ? accessToken(option('--scope')) : resourceToken(option('--resource')));
    break;
  case 'cloud show':
    answer({ name: 'AzureCloud', isActive: true, suffixes: { storageEndpoint: 'core.windows.net' } });
    break;
  case 'ad sp show':
    answer({ id: `object-id-of-${option('--id')}`, appId: option('--id') });
    break;
  case 'ad signed-in-user show':
    answer({ id: 'object-id-of-the-person', userPrincipalName: state.signedIn.name });
    break;
  case 'group exists':
    answer(state.groups.includes(option('--name')));
    break;
  case 'group create':
    state.groups.push(option('--name'));
    save();
    answer({ name: option('--name') });
    break;
  case 'deployment group what-if':
    templateCall();
    log();
    process.stdout.write(
      `Resource and property changes are indicated with these symbols:\n  + Create\n\nThe deployment will update the following scope:\n\nScope: /subscriptions/11111111-2222-4333-8444-555555555555/resourceGroups/${option('--resource-group')}\n\nResource changes: 12 to create.\n`,
    );
    break;
  case 'deployment group create': {
    const { parametersFile, inline } = templateCall();
    const group = option('--resource-group');
    if (!state.groups.includes(group)) fail(`resource group ${group} could not be found`);
    state.deployments[group] = [
      ...(state.deployments[group] ?? []),
      {
        name: option('--name'),
        properties: { provisioningState: 'Succeeded', timestamp: new Date().toISOString(), outputs: outputsFor(parametersFile, inline) },
      },
    ];
    // The storage account's network as main.bicep declares it: isolated, private endpoints in the environment's
    // network (vnet-drawreq-<env>); closed, public access off and no rule.
    const outputs = outputsFor(parametersFile, inline);
    const closed = outputs.storageClosed.value === true;
    state.storage = {
      ...state.storage,
      [outputs.storageAccountName.value]: {
        publicNetworkAccess: closed ? 'Disabled' : 'Enabled',
        defaultAction: closed ? 'Deny' : 'Allow',
        privateNetwork:
          outputs.networkIsolated.value === true ? `vnet-drawreq-${JSON.parse(readFileSync(parametersFile, 'utf8')).parameters.environmentName.value}` : null,
      },
    };
    save();
    answer({});
    break;
  }
  case 'deployment group show': {
    const found = (state.deployments[option('--resource-group')] ?? []).find((d) => d.name === option('--name'));
    if (found === undefined) fail(`deployment ${option('--name')} could not be found`);
    answer(found);
    break;
  }
  case 'deployment group list':
    answer(state.deployments[option('--resource-group')] ?? []);
    break;
  case 'storage entity insert': {
    // --if-exists fail (the default): Insert Entity, refused for a row that exists; merge and replace:
    // Insert Or Merge / Insert Or Replace (azure-cli#22236, fixed by #22334: fail no longer upserts).
    const ifExists = option('--if-exists') ?? 'fail';
    authorize({ fail: 'Insert Entity', merge: 'Insert Or Merge Entity', replace: 'Insert Or Replace Entity' }[ifExists]);
    const entity = entityGiven();
    const table = entityTable();
    const existing = state.tables?.[table]?.[entity.PartitionKey];
    if (ifExists === 'fail' && existing !== undefined && existing.RowKey === entity.RowKey)
      fail('The specified entity already exists.\nErrorCode:EntityAlreadyExists');
    const written = ifExists === 'merge' ? { ...existing, ...entity } : entity;
    state.tables = { ...state.tables, [table]: { ...state.tables?.[table], [entity.PartitionKey]: written } };
    save();
    answer({ etag: etagOf(written) });
    break;
  }
  case 'storage entity delete': {
    // Delete Entity, with If-Match: the row as read (its ETag) or any (*).
    authorize('Delete Entity');
    const table = entityTable();
    const row = existingRow(table, option('--partition-key'), option('--row-key'));
    const ifMatch = option('--if-match') ?? '*';
    if (ifMatch !== '*' && ifMatch !== etagOf(row))
      fail('The update condition specified in the request was not satisfied.\nErrorCode:UpdateConditionNotSatisfied');
    delete state.tables[table][option('--partition-key')];
    save();
    answer({ deleted: true });
    break;
  }
  case 'storage table delete': {
    authorize('Delete Table');
    delete state.tables?.[`${option('--account-name')}/${option('--name')}`];
    save();
    answer({ deleted: true });
    break;
  }
  case 'storage entity show': {
    authorize('Query Entities');
    const row = existingRow(entityTable(), option('--partition-key'), option('--row-key'));
    answer({ ...typed(row), etag: etagOf(row) });
    break;
  }
  case 'storage entity merge': {
    // Table storage's Merge Entity: with If-Match, only an existing row whose ETag matches (or any, for *);
    // without it, modelled as the REST API's Insert Or Merge, which creates the row (a script must not rely
    // on the CLI's default).
    authorize(option('--if-match') === undefined ? 'Insert Or Merge Entity' : 'Merge Entity');
    const entity = entityGiven();
    const table = entityTable();
    const ifMatch = option('--if-match');
    const row = ifMatch === undefined ? state.tables?.[table]?.[entity.PartitionKey] : existingRow(table, entity.PartitionKey, entity.RowKey);
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== etagOf(row))
      fail('The update condition specified in the request was not satisfied.\nErrorCode:UpdateConditionNotSatisfied');
    const merged = { ...row, ...entity };
    state.tables = { ...state.tables, [table]: { ...state.tables?.[table], [entity.PartitionKey]: merged } };
    save();
    answer({ etag: etagOf(merged) });
    break;
  }
  case 'storage entity replace': {
    // Update Entity: an existing row replaced whole (If-Match, * by default).
    authorize('Update Entity');
    const entity = entityGiven();
    const table = entityTable();
    existingRow(table, entity.PartitionKey, entity.RowKey);
    state.tables[table][entity.PartitionKey] = entity;
    save();
    answer({ etag: etagOf(entity) });
    break;
  }
  case 'functionapp deploy': {
    const zip = option('--src-path');
    if (!existsSync(zip)) fail(`no package at ${zip}`);
    entry.sha256 = createHash('sha256').update(readFileSync(zip)).digest('hex');
    answer({});
    break;
  }
  default:
    fail(`unexpected call: az ${args.join(' ')}`);
}
