/** applyDrawRules against an independent model of docs/contract.md §2.3 rows 4–8, on generated inputs. */
import fc from 'fast-check';
import { applyDrawRules, type Loan } from '../../lib/drawRules';
import type { DrawRequest } from '../../lib/requestBody';
import { creditDollars, modelVerdicts, scenario, type ModelLoan } from '../support/drawRulesModel';

const PARTNERS = ['P1', 'P2', 'p1'];
const LOANS = [1, 2, 3, 4, 5, 6, 7, 8];

test("for 5,000 generated worlds and batches, every element gets the model's verdict (precedence included)", () => {
  fc.assert(
    fc.property(scenario(PARTNERS, LOANS), (world) => {
      const modelLoans = new Map<number, ModelLoan>(world.loans.map((l) => [l.loanNumber, l]));
      const loans = new Map<string, Loan>(
        [...modelLoans].map(([n, l]) => [String(n), { partnerId: l.partnerId, availableCredit: creditDollars(l), fundingInvestorId: l.fundingInvestorId }]),
      );
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
      const actual: (string | undefined)[] = requests.map(() => undefined);
      if (!verdict.accepted) {
        for (const e of verdict.errors) {
          expect(actual[e.index as number]).toBeUndefined(); // exactly one error per element
          actual[e.index as number] = e.code;
        }
        expect(verdict.errors.map((e) => e.index)).toEqual([...verdict.errors.map((e) => e.index)].sort((a, b) => (a as number) - (b as number)));
      }
      expect(actual).toEqual(expected);
      expect(verdict.accepted).toBe(expected.every((code) => code === undefined));
    }),
    { numRuns: 5_000 },
  );
});
