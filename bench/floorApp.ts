/**
 * The floor as a function app (bench/workerFloor.ts bundles it and loads it into the real worker):
 * the same route and request as the service's, answered 204 after the floor's storage work
 * (bench/floor.ts), or 502 when storage answered an error. It reads the body to learn the batch's
 * loans, and checks nothing: no token, no shape, no rules, no telemetry.
 */
import { app } from '@azure/functions';
import { floorBatch, floorClients, type FloorDraw } from './floor';

const setting = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`floor: ${name} is not set`);
  return value;
};
const { loans, draws } = floorClients(setting('TABLES_CONNECTION_STRING'), setting('LOANS_TABLE'), setting('DRAWS_TABLE'));

app.http('DrawRequest', {
  route: 'DrawRequest',
  methods: ['POST'],
  authLevel: 'anonymous',
  handler: async (request) => ({ status: (await floorBatch(loans, draws, (await request.json()) as FloorDraw[])) ? 204 : 502 }),
});
