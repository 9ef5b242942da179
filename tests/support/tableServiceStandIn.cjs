#!/usr/bin/env node
// The Table service of the Azure CLI stand-in's storage accounts (tests/support/azStandIn.cjs), over HTTPS,
// for code that calls Table Storage's REST API itself (scripts/stopClient.cjs, through @azure/data-tables):
// Get Entity and Insert Entity on the rows the stand-in's state holds, for a bearer token the stand-in
// issued (its identity), refused as Azure Storage refuses them (tests/support/storageAccess.cjs). One port
// per network a caller may be in, "public" and each virtual network named: outside, an account's name
// resolves to its public address; inside, to its private endpoint. Each request is appended to the Azure CLI
// stand-in's log as { args: ['tables', method, '/<account>/<table>'], as }. Any other request is answered 501.
//
// Usage: node tableServiceStandIn.cjs <config file> <key file> <certificate file> <network>...
//   prints { "<network>": port, … } once listening; the config file (JSON { azState, azLog }) is read on
//   every request, so that each test points it at its own state. The certificate is for 127.0.0.1, from a CA
//   the caller trusts (NODE_EXTRA_CA_CERTS): the SDK sends a bearer token over TLS only.
const { appendFileSync, readFileSync, writeFileSync } = require('node:fs');
const { createServer } = require('node:https');
const { randomUUID } = require('node:crypto');
const { URL } = require('node:url');
const { REFUSALS, etagOf, refusal, typed } = require('./storageAccess.cjs');

const [configFile, keyFile, certFile, ...networks] = process.argv.slice(2);
const tls = { key: readFileSync(keyFile), cert: readFileSync(certFile) };
const JSON_TYPE = 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8';
const ERRORS = { ...REFUSALS, ResourceNotFound: 'The specified resource does not exist.', EntityAlreadyExists: 'The specified entity already exists.' };

function answer(res, status, headers, body) {
  res.writeHead(status, { 'x-ms-request-id': randomUUID(), 'x-ms-version': '2019-02-02', Date: new Date().toUTCString(), ...headers });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}
function error(res, status, code) {
  answer(res, status, { 'Content-Type': JSON_TYPE, 'x-ms-error-code': code }, { 'odata.error': { code, message: { lang: 'en-US', value: ERRORS[code] } } });
}
/** An OData string literal's value ('it''s' → it's). */
const literal = (text) => text.replace(/''/g, "'");

function handle(network, req, body, res) {
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  const state = JSON.parse(readFileSync(config.azState, 'utf8'));
  const url = new URL(req.url, 'https://table');
  const path = decodeURIComponent(url.pathname);
  const entity = /^\/([^/]+)\/([A-Za-z0-9]+)\(PartitionKey='(.*)',RowKey='(.*)'\)$/.exec(path);
  const insert = /^\/([^/]+)\/([A-Za-z0-9]+)$/.exec(path);
  const [account, table] = (entity ?? insert ?? []).slice(1);
  const grant = state.tokens?.[(req.headers.authorization ?? '').replace(/^Bearer /, '')];
  appendFileSync(config.azLog, `${JSON.stringify({ args: ['tables', req.method, `/${account}/${table}`], as: grant?.client ?? null, cwd: '' })}\n`);
  const operation = req.method === 'GET' && entity !== null ? 'Query Entities' : req.method === 'POST' && insert !== null ? 'Insert Entity' : undefined;
  if (operation === undefined) return answer(res, 501, {}, { message: `table stand-in: no ${req.method} ${path}` });
  if (grant?.resource === undefined || !grant.resource.startsWith('https://storage.azure.com')) return error(res, 401, 'InvalidAuthenticationInfo');
  const refused = refusal(state, { account, table, network: network === 'public' ? undefined : network, who: grant.client, operation });
  if (refused !== undefined) return error(res, 403, refused);
  const rows = state.tables?.[`${account}/${table}`] ?? {};
  if (operation === 'Query Entities') {
    const row = rows[literal(entity[3])];
    if (row === undefined || row.RowKey !== literal(entity[4])) return error(res, 404, 'ResourceNotFound');
    return answer(
      res,
      200,
      { 'Content-Type': JSON_TYPE, ETag: etagOf(row) },
      { 'odata.metadata': `https://table/${account}/$metadata#${table}/@Element`, ...typed(row) },
    );
  }
  const row = JSON.parse(body);
  if (rows[row.PartitionKey] !== undefined && rows[row.PartitionKey].RowKey === row.RowKey) return error(res, 409, 'EntityAlreadyExists');
  state.tables = { ...state.tables, [`${account}/${table}`]: { ...rows, [row.PartitionKey]: row } };
  writeFileSync(config.azState, JSON.stringify(state, null, 1));
  return answer(res, 204, { ETag: etagOf(row), 'Preference-Applied': 'return-no-content' });
}

const ports = {};
let listening = 0;
for (const network of ['public', ...networks]) {
  const server = createServer(tls, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => handle(network, req, Buffer.concat(chunks).toString('utf8'), res));
  });
  server.listen(0, '127.0.0.1', () => {
    ports[network] = server.address().port;
    if (++listening === networks.length + 1) process.stdout.write(`${JSON.stringify(ports)}\n`);
  });
}
