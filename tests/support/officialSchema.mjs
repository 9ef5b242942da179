// Validates an OpenAPI document against the official OpenAPI JSON Schema of its version, with the
// maintained @seriousme/openapi-schema-validator (ESM-only: run as a child process from Jest).
// Prints {"version","schemaId","valid","errors"} as JSON.
import process from 'node:process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Validator } from '@seriousme/openapi-schema-validator';

const require = createRequire(import.meta.url);
const validator = new Validator();
const result = await validator.validate(process.argv[2]);
const schema = JSON.parse(readFileSync(require.resolve(`@seriousme/openapi-schema-validator/schemas/v${validator.version}/schema.json`), 'utf8'));
process.stdout.write(JSON.stringify({ version: validator.version, schemaId: schema.$id, valid: result.valid, errors: result.errors ?? [] }));
