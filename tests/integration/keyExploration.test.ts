/**
 * Every order of each small scope (tests/support/explorationScopes.ts), explored over the service's own
 * handler and checked against storage (docs/contract.md §9). CI runs the scopes marked `ci`; `npm run explore`
 * runs them all (EXPLORE=all) and prints, per scope, the orders explored and the time taken.
 */
import { describeOrder, explore } from '../support/exploration';
import { SCOPES } from '../support/explorationScopes';

const ALL = process.env.EXPLORE === 'all';
const ONLY = process.env.EXPLORE_SCOPE;
const chosen = SCOPES.filter((s) => (ONLY === undefined ? ALL || s.ci : s.name.includes(ONLY)));

test.each(chosen.map((s) => [s.name, s] as const))(
  '%s: every order keeps every promise',
  async (_name, scope) => {
    const result = await explore(scope);
    if (ALL || ONLY !== undefined)
      process.stdout.write(`${JSON.stringify({ scope: scope.name, orders: result.orders, pruned: result.pruned, ms: result.ms, answers: result.answers })}\n`);
    if (result.brokenCount > 0)
      throw new Error(`${result.brokenCount} of ${result.orders} orders broke a promise; the first:\n${result.broken.map(describeOrder).join('\n\n')}`);
    // The scope is what it claims: more than one order, and the attempts were answered.
    expect(result.orders).toBeGreaterThan(1);
  },
  1_800_000,
);
