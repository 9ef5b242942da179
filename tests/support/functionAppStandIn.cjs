#!/usr/bin/env node
// The deployed function app as the pipeline tests see it (tests/integration/pipeline.test.ts): an HTTP
// server that answers POST /DrawRequest as docs/contract.md says the service does, from the state the
// pipeline left behind. Its Entra is the az stand-in (the tokens it issued, for which scope), its Partners
// table and stop list the rows written through that stand-in, and its settings come from a
// config file read on every request, so a test can deploy the service "wrongly". The answers' bytes are
// the service's own (lib/problem.ts), built by the test; tests/integration/smokeCheck.test.ts proves the
// smoke request against the real handler.
//
// Usage: node functionAppStandIn.cjs <request log> <config file>; prints its port.
// Config: { azState, audiences: [scope], settings: { partnersTable, loansTable, drawsTable, idempotencyTable, stoppedClientsTable },
//           tables: [names the storage account has], loanNumbers: [loans that exist], records: bool (a broken
//           service that records what it must refuse), answers: { noToken, badToken, dependencyFailed,
//           noSuchLoan ("loan exists" for each element of one batch), other, recorded }: { status, headers, body } }
// The request log has one JSON line per request: { method, url, token, idempotencyKey }.
const { appendFileSync, readFileSync } = require('node:fs');
const { createServer } = require('node:http');

const [log, configFile] = process.argv.slice(2);

/** The service's checks, in its order (docs/contract.md §2): token, partner, storage, the draw rules. */
function answer(config, authorization, text) {
  const { answers } = config;
  if (authorization === undefined) return answers.noToken;
  const az = JSON.parse(readFileSync(config.azState, 'utf8'));
  const issued = az.tokens?.[authorization.replace(/^Bearer\s+/i, '')];
  if (issued === undefined || !config.audiences.includes(issued.scope)) return answers.badToken;
  // A table a setting names that the account does not have fails the reads: 502, never 401.
  if (Object.values(config.settings).some((table) => !config.tables.includes(table))) return answers.dependencyFailed;
  const rowOf = (table) =>
    Object.entries(az.tables ?? {})
      .filter(([name]) => name.endsWith(`/${table}`))
      .map(([, rows]) => rows[issued.client])
      .find((row) => row !== undefined);
  const partner = rowOf(config.settings.partnersTable);
  if (rowOf(config.settings.stoppedClientsTable) !== undefined) return answers.badToken; // on the stop list
  if (partner === undefined || partner.Active !== 'true' || !partner.PartnerId) return answers.badToken;
  let draws;
  try {
    draws = JSON.parse(text);
  } catch {
    return answers.other;
  }
  if (config.records) return answers.recorded;
  // The "loan exists" answer the test built is the true one only for exactly the batch it was built for.
  const expected = JSON.parse(answers.noSuchLoan.body).errors;
  const fits =
    Array.isArray(draws) &&
    draws.length === expected.length &&
    draws.every((d, i) => d.loanNumber === expected[i].loanNumber && !config.loanNumbers.includes(d.loanNumber));
  return fits ? answers.noSuchLoan : answers.other;
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const authorization = request.headers.authorization;
    const entry = { method: request.method, url: request.url, token: authorization !== undefined, idempotencyKey: request.headers['idempotency-key'] ?? null };
    appendFileSync(log, `${JSON.stringify(entry)}\n`);
    if (request.method !== 'POST' || request.url !== '/DrawRequest') return response.writeHead(404).end();
    const reply = answer(JSON.parse(readFileSync(configFile, 'utf8')), authorization, Buffer.concat(chunks).toString('utf8'));
    response.writeHead(reply.status, reply.headers).end(reply.body);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
