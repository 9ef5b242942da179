/**
 * The vendored worker's entry (dist/src/nodejsWorker.js) without its list of Node majors: that list is
 * v14 to v22 in 3.9.1, and upstream allowed Node 24 by adding it (Azure/azure-functions-nodejs-worker pull
 * request 768), the entry's only change for it. tests/support/workerHost.ts starts a worker through this
 * file only on a Node major the entry would refuse; the bundle to load is its first argument.
 */
const [bundle] = process.argv.splice(2, 1);
require(bundle).worker.startNodeWorker(process.argv);
