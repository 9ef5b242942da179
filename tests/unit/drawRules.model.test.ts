/** applyDrawRules against an independent model of the storage rules of docs/contract.md §2.3, on generated inputs. */
import fc from 'fast-check';
import { FIELDS_READ, applyDrawRules, type Loan } from '../../lib/drawRules';
import { STORAGE_RULES } from '../../lib/errorCatalogue';
import { loanOf } from '../../lib/loans';
import type { DrawRequest } from '../../lib/requestBody';
import { MODEL_RULES, loanRow, modelVerdicts, scenario, type ModelLoan } from '../support/drawRulesModel';

const PARTNERS = ['P1', 'P2', 'p1'];
const LOANS = [1, 2, 3, 4, 5, 6, 7, 8];

test('the model reads every storage rule of the catalogue, and no other, by name', () => {
  const catalogue = STORAGE_RULES.map((r) => r.name as string);
  expect({ unknownToTheModel: catalogue.filter((name) => !(name in MODEL_RULES)) }).toEqual({ unknownToTheModel: [] });
  expect({ notInTheCatalogue: Object.keys(MODEL_RULES).filter((name) => !catalogue.includes(name)) }).toEqual({ notInTheCatalogue: [] });
});

test("for 5,000 generated worlds and batches, every element gets the model's error (precedence included)", () => {
  fc.assert(
    fc.property(scenario(PARTNERS, LOANS), (world) => {
      const modelLoans = new Map<number, ModelLoan>(world.loans.map((l) => [l.loanNumber, l]));
      // Each loan as the store reads it from its row: the columns the rules declare, and only those.
      const loans = new Map<string, Loan>([...modelLoans].map(([n, l]) => [String(n), loanOf(loanRow(l), FIELDS_READ)]));
      const requests: DrawRequest[] = world.requests.map((r, index) => ({
        index,
        loanNumber: r.loanNumber,
        requestor: 'r',
        amount: r.amountCents / 100,
        amountCents: r.amountCents,
        pointers: { loanNumber: `/${index}/loanNumber`, amount: `/${index}/amount` },
      }));
      const expected = modelVerdicts(world.requests, modelLoans, new Set(world.drawnToday), world.partnerId);

      const verdict = applyDrawRules(requests, loans, new Set(world.drawnToday.map(String)), world.partnerId);
      const actual: ({ code: string; detail: string } | undefined)[] = requests.map(() => undefined);
      if (!verdict.accepted) {
        for (const e of verdict.errors) {
          expect(actual[e.index as number]).toBeUndefined(); // exactly one error per element
          actual[e.index as number] = { code: e.code, detail: e.detail };
        }
        expect(verdict.errors.map((e) => e.index)).toEqual([...verdict.errors.map((e) => e.index)].sort((a, b) => (a as number) - (b as number)));
      }
      expect(actual).toEqual(expected.map((e) => e && { code: e.code, detail: e.detail }));
      expect(verdict.accepted).toBe(expected.every((e) => e === undefined));
    }),
    { numRuns: 5_000 },
  );
});

test('every storage rule decides some element of the generated worlds (the scenario generates the data each rule reads)', () => {
  const decided = new Set(
    fc.sample(scenario(PARTNERS, LOANS), { numRuns: 1_000, seed: 43 }).flatMap((world) => {
      const loans = new Map<number, ModelLoan>(world.loans.map((l) => [l.loanNumber, l]));
      return modelVerdicts(world.requests, loans, new Set(world.drawnToday), world.partnerId).map((v) => v?.rule);
    }),
  );
  expect({ neverDecided: STORAGE_RULES.map((r) => r.name).filter((name) => !decided.has(name)) }).toEqual({ neverDecided: [] });
});
