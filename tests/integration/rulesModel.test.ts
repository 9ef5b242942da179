/**
 * The handler's verdicts against the independent model of the storage rules of docs/contract.md §2.3,
 * for generated loans, partners, today's draws and batches, through real Table Storage (Azurite): the
 * model's loans are written as the `Loans` rows of contract §4, which the store must read.
 */
import type { TableEntity } from '@azure/data-tables';
import fc from 'fast-check';
import { Harness, OTHER_CLIENT, OTHER_PARTNER, PARTNER, nextLoanNumber } from '../support/harness';
import { loanRow, modelVerdicts, scenario, type ModelLoan } from '../support/drawRulesModel';

const DAY = '2032-06-15';
let h: Harness;
let tokens: Record<string, string>;
beforeAll(async () => {
  h = await Harness.start({}, { now: () => new Date(`${DAY}T12:00:00Z`) });
  tokens = { [PARTNER]: await h.token(), [OTHER_PARTNER]: await h.token({ azp: OTHER_CLIENT, sub: OTHER_CLIENT }) };
});
afterAll(() => h.stop());

const SLOTS = [0, 1, 2, 3, 4, 5];

test("200 generated worlds: the 204 or the per-element errors are exactly the model's, and storage agrees", async () => {
  await fc.assert(
    fc.asyncProperty(scenario([PARTNER, OTHER_PARTNER, PARTNER.toLowerCase()], SLOTS), async (world) => {
      // Fresh loan numbers per world, so worlds do not see each other's rows.
      const numbers = SLOTS.map(() => nextLoanNumber());
      const loanNumber = (slot: number) => numbers[slot];
      const loans = h.table('loans');
      const draws = h.table('draws');
      await Promise.all([
        ...world.loans.map((l) => {
          const row: TableEntity<Record<string, unknown>> = { partitionKey: String(loanNumber(l.loanNumber)), rowKey: '' };
          // A number is typed as a Double, as the loan-servicing system stores credit.
          for (const [column, value] of Object.entries(loanRow(l))) row[column] = typeof value === 'number' ? { value: String(value), type: 'Double' } : value;
          return loans.upsertEntity(row, 'Replace');
        }),
        ...world.drawnToday.map((slot) => draws.createEntity({ partitionKey: DAY, rowKey: String(loanNumber(slot)), Status: 'Pending', PartnerId: 'SEEDED' })),
      ]);

      // The caller is one of the two registered partners; the lower-case id is a loan owner only.
      const caller = world.partnerId === OTHER_PARTNER ? OTHER_PARTNER : PARTNER;
      const modelLoans = new Map<number, ModelLoan>(world.loans.map((l) => [l.loanNumber, l]));
      const expected = modelVerdicts(world.requests, modelLoans, new Set(world.drawnToday), caller);
      const body = world.requests.map((r) => ({ loanNumber: loanNumber(r.loanNumber), requestor: 'model@partner.example', amount: r.amountCents / 100 }));
      const reply = await h.post(body, { token: tokens[caller] });

      const rows = await h.drawsFor(...numbers);
      if (expected.every((e) => e === undefined)) {
        expect(reply.status).toBe(204);
        expect(rows).toHaveLength(world.drawnToday.length + body.length);
      } else {
        expect(reply.status).toBe(400);
        const actual: ({ code: string; detail: string } | undefined)[] = body.map(() => undefined);
        for (const e of reply.body.errors) actual[e.index] = { code: e.code, detail: e.detail };
        expect(actual).toEqual(expected.map((e) => e && { code: e.code, detail: e.detail }));
        expect(rows).toHaveLength(world.drawnToday.length); // nothing written
      }
    }),
    { numRuns: 200 },
  );
}, 120_000);
