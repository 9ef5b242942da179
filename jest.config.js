/**
 * Jest runs the TypeScript sources through ts-jest. jose and oauth2-mock-server are ESM-only,
 * which Jest's CommonJS loader cannot require on Node 20, so babel turns them into CommonJS.
 */
const esmOnly = ['jose', 'oauth2-mock-server', 'is-plain-obj'];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tests/tsconfig.json' }],
    '^.+\\.m?js$': ['babel-jest', { babelrc: false, configFile: false, plugins: ['@babel/plugin-transform-modules-commonjs'] }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  testTimeout: 30000,
  maxWorkers: 2,
  // The files known to take longest first, so that the two workers end together (tests/support/longestFirst.cjs).
  testSequencer: '<rootDir>/tests/support/longestFirst.cjs',
};
