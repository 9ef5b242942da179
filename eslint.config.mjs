// Lint: typescript-eslint's type-checked rules, chosen for the bugs they catch in promise-heavy code
// (docs/decisions/0135-lint-and-format.md). Formatting is Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // vendor/: third-party builds kept as shipped (vendor/azure-functions-nodejs-worker/README.md).
  { ignores: ['dist/', 'node_modules/', 'lib/generated/', 'bench/profiles/', 'tests/fixtures/', 'vendor/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // Tests read parsed JSON bodies, typed `any` on purpose: a wrong shape fails the assertion anyway.
    files: ['tests/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
  { files: ['jest.config.js'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } } },
  // Preloads for workers under test (node --require), stand-ins, and the scripts the deployment runs on a
  // runner without a build (scripts/*.cjs): plain CommonJS for Node.
  {
    files: ['tests/support/*.cjs', 'scripts/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        __dirname: 'readonly',
        process: 'writable',
        globalThis: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
