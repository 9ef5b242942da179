import { readFileSync } from 'node:fs';
import { GENERATED_VALIDATOR, generatedValidatorText } from '../../scripts/generateValidator';

test('the committed validator is what lib/elementSchema.ts generates (run `npm run generate` after changing the schema)', () => {
  expect(readFileSync(GENERATED_VALIDATOR, 'utf8')).toBe(generatedValidatorText());
});

test("the generated validator needs no schema compiler at run time: only the checks module and ajv's small runtime helpers", () => {
  const requires = [...readFileSync(GENERATED_VALIDATOR, 'utf8').matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]);
  expect(new Set(requires)).toEqual(new Set(['../elementChecks', 'ajv/dist/runtime/ucs2length']));
});
