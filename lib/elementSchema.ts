/**
 * The JSON Schema of one draw element (after key mapping), and the ajv set-up that turns it into
 * validation code. Not loaded at run time: `npm run generate` writes that code, once, to
 * lib/generated/validateElement.ts, which the service loads instead of compiling the schema at every
 * cold start (compiling it, and loading ajv's compiler, cost about a quarter of the bundle's load
 * time). A unit test fails if the committed code is not what this schema generates.
 */
import Ajv, { _, type KeywordCxt } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';

export const ELEMENT_SCHEMA = {
  type: 'object',
  required: ['loanNumber', 'requestor', 'amount'],
  properties: {
    loanNumber: { loanNumberForm: true },
    // Already trimmed; no control characters and no unpaired surrogates (they cannot be stored faithfully).
    requestor: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\p{Cc}\\p{Cs}]*$' },
    amount: { type: 'number', minimum: 1, maxDecimalPlaces: 2 },
  },
} as const;

/** How the generated code (in lib/generated/) reaches the checks of lib/elementChecks.ts. */
const CHECKS = '../elementChecks';

/** The validation code for ELEMENT_SCHEMA, as an ES module (compiled to CommonJS with the rest). */
export function elementValidatorSource(): string {
  const ajv = new Ajv({ allErrors: true, strict: true, code: { source: true, esm: true } });
  // `code` is what the generated module requires; `ref` would only serve validating in this process.
  const check = (cxt: KeywordCxt, code: ReturnType<typeof _>) => cxt.gen.scopeValue('func', { ref: () => undefined, code });
  ajv.addKeyword({
    keyword: 'loanNumberForm',
    schemaType: 'boolean',
    code: (cxt) => cxt.fail(_`!${check(cxt, _`require(${CHECKS}).isLoanNumber`)}(${cxt.data}, ${cxt.it.parentData})`),
  });
  ajv.addKeyword({
    keyword: 'maxDecimalPlaces',
    type: 'number',
    schemaType: 'number',
    code: (cxt) => cxt.fail(_`!${check(cxt, _`require(${CHECKS}).withinDecimalPlaces`)}(${cxt.data}, ${cxt.it.parentData}, ${cxt.schema as number})`),
  });
  return standaloneCode(ajv, ajv.compile(ELEMENT_SCHEMA));
}
