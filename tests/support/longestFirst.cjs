// Jest's test order (jest.config.js testSequencer): the files known to take longest start first, so that
// neither of the two workers is left running one long file alone at the end. Jest's own order does this
// only from the timings of an earlier run on the same machine (its cache); a fresh clone, as CI runs, has
// none, and Jest falls back to file size, which starts the small but long files (keyExploration.test.ts,
// soak.test.ts) last. A file that failed in the last run (Jest's cache) still comes first, and the files not
// listed keep Jest's order after the listed ones. The seconds are one full run's on a 2-core machine
// (2026-11-29, before the cuts of that day); only their order matters, so they need no care beyond it.
const { relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const SECONDS = new Map([
  ['tests/integration/pipeline.test.ts', 434],
  ['tests/integration/histories.test.ts', 238],
  ['tests/integration/keyExploration.test.ts', 112],
  ['tests/integration/adversarial.test.ts', 66],
  ['tests/integration/microsoftClients.test.ts', 61],
  ['tests/integration/soak.test.ts', 39],
  ['tests/integration/storageFaults.test.ts', 37],
  ['tests/integration/auth.test.ts', 31],
  ['tests/integration/idempotency.test.ts', 30],
  ['tests/integration/worker.test.ts', 28],
  ['tests/integration/hostileInput.test.ts', 26],
  ['tests/integration/generatedClient.test.ts', 26],
  ['tests/unit/workflows.test.ts', 24],
  ['tests/integration/keyOutage.test.ts', 23],
  ['tests/unit/lint.test.ts', 23],
  ['tests/integration/telemetry.test.ts', 22],
  ['tests/integration/storageDeadlines.test.ts', 22],
  ['tests/integration/dayPartitionThrottling.test.ts', 20],
  ['tests/integration/stopClient.test.ts', 20],
  ['tests/integration/example.test.ts', 18],
  ['tests/integration/devHost.test.ts', 15],
  ['tests/integration/validatingProxy.test.ts', 15],
  ['tests/integration/storageCalls.test.ts', 15],
  ['tests/unit/openapiLint.test.ts', 14],
  ['tests/integration/smokeCheck.test.ts', 14],
  ['tests/integration/caching.test.ts', 13],
  ['tests/integration/drawRequest.test.ts', 12],
  ['tests/integration/docExamples.test.ts', 12],
  ['tests/unit/kql.test.ts', 12],
  ['tests/integration/hostileLoad.test.ts', 11],
  ['tests/integration/package.test.ts', 10],
]);

class LongestFirst extends Sequencer {
  sort(tests) {
    const jestOrder = super.sort(tests);
    const seconds = (test) => SECONDS.get(relative(test.context.config.rootDir, test.path).split('\\').join('/')) ?? -1;
    const rank = new Map(jestOrder.map((test, i) => [test, i]));
    return [...jestOrder].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      return seconds(b) - seconds(a) || rank.get(a) - rank.get(b);
    });
  }
}

module.exports = LongestFirst;
