// Jest's test order (jest.config.js testSequencer): the files known to take longest start first, so that
// neither of the two workers is left running one long file alone at the end. Jest's own order does this
// only from the timings of an earlier run on the same machine (its cache); a fresh clone, as CI runs, has
// none, and Jest falls back to file size, which starts the small but long files (keyExploration.test.ts,
// soak.test.ts) last. A file that failed in the last run (Jest's cache) still comes first, and the files not
// listed keep Jest's order after the listed ones.
const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/** Longest first, as one full run on a 2-core machine timed them (2026-11-29). */
const LONGEST_FIRST = [
  'tests/integration/pipeline.test.ts',
  'tests/integration/histories.test.ts',
  'tests/integration/keyExploration.test.ts',
  'tests/integration/adversarial.test.ts',
  'tests/integration/microsoftClients.test.ts',
  'tests/integration/soak.test.ts',
  'tests/integration/storageFaults.test.ts',
  'tests/integration/auth.test.ts',
  'tests/integration/idempotency.test.ts',
  'tests/integration/worker.test.ts',
  'tests/integration/hostileInput.test.ts',
  'tests/integration/generatedClient.test.ts',
  'tests/unit/workflows.test.ts',
  'tests/integration/keyOutage.test.ts',
  'tests/unit/lint.test.ts',
  'tests/integration/telemetry.test.ts',
  'tests/integration/storageDeadlines.test.ts',
  'tests/integration/dayPartitionThrottling.test.ts',
  'tests/integration/stopClient.test.ts',
  'tests/integration/example.test.ts',
  'tests/integration/devHost.test.ts',
  'tests/integration/validatingProxy.test.ts',
  'tests/integration/storageCalls.test.ts',
  'tests/unit/openapiLint.test.ts',
  'tests/integration/smokeCheck.test.ts',
  'tests/integration/caching.test.ts',
  'tests/integration/drawRequest.test.ts',
  'tests/integration/docExamples.test.ts',
  'tests/unit/kql.test.ts',
  'tests/integration/hostileLoad.test.ts',
  'tests/integration/package.test.ts',
];
const RANK = new Map(LONGEST_FIRST.map((file, i) => [file, i]));

class LongestFirst extends Sequencer {
  sort(tests) {
    const jestOrder = super.sort(tests);
    const listed = (test) => RANK.get(relative(test.context.config.rootDir, test.path).split('\\').join('/')) ?? LONGEST_FIRST.length;
    const rank = new Map(jestOrder.map((test, i) => [test, i]));
    return [...jestOrder].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      return listed(a) - listed(b) || rank.get(a) - rank.get(b);
    });
  }
}

module.exports = LongestFirst;
