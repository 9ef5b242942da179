#!/usr/bin/env node
// GitHub's OIDC token endpoint for a job, as a step reaches it (GitHub's OIDC reference, "Methods for
// requesting the OIDC token"): GET "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=<audience>" with
// "Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" answers { "value": "<JWT>" }. The workflow runner
// (tests/support/workflowRunner.ts) writes each job's claims to <folder>/<request token>.json; the JWT
// carries them with the audience asked for (unsigned: what reads it here only decodes it). A process of its
// own, since the runner blocks the test's while a step runs.
//
// Usage: node oidcTokenStandIn.cjs <folder>   (prints the port once listening)
const { existsSync, readFileSync } = require('node:fs');
const { createServer } = require('node:http');
const { join } = require('node:path');
const { URL } = require('node:url');

const folder = process.argv[2];
const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://token');
  const requestToken = /^bearer ([\w-]+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const file = requestToken === undefined ? undefined : join(folder, `${requestToken}.json`);
  if (url.pathname !== '/token' || file === undefined || !existsSync(file)) {
    res.writeHead(401, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ message: 'Unable to get ACTIONS_ID_TOKEN_REQUEST_URL env variable or the request token is not valid' }));
    return;
  }
  const claims = JSON.parse(readFileSync(file, 'utf8'));
  const now = Math.floor(Date.now() / 1000);
  const audience = url.searchParams.get('audience') ?? claims.aud;
  const value = `${part({ alg: 'RS256', typ: 'JWT', kid: 'stand-in' })}.${part({ ...claims, aud: audience, iat: now, nbf: now - 5, exp: now + 300 })}.c2lnbmF0dXJl`;
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ count: 1, value }));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
