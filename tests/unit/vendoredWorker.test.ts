/**
 * The Functions Node.js worker the repository carries (vendor/azure-functions-nodejs-worker) says what
 * it is: its licence and third-party notices are there, its README records the upstream repository,
 * the source commit and the version the build's package.json and bundle carry, and every file the
 * worker tests start or load is present. Redistributing it is allowed only with the licence and the
 * notices, and updating it is possible only if the commit is known.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VENDORED_WORKER_DIR } from '../support/workerHost';

const read = (file: string) => readFileSync(join(VENDORED_WORKER_DIR, file), 'utf8');
const readme = read('README.md');
const pkg = JSON.parse(read('package.json')) as { name: string; version: string; repository: { url: string } };

test('the licence and the third-party notices are there', () => {
  expect(read('LICENSE')).toMatch(/^\s*MIT License\s+Copyright \(c\) \.NET Foundation/);
  expect(read('protos/LICENSE')).toMatch(/MIT License/);
  const notices = read('NOTICE.html');
  expect(notices).toContain('NOTICES AND INFORMATION');
  // The bundle's largest third-party parts.
  for (const name of ['@grpc/grpc-js', 'protobufjs']) expect(notices).toContain(name);
  for (const file of ['LICENSE', 'NOTICE.html', 'protos/LICENSE']) expect(readme).toContain(`](${file})`);
});

test('the README records the upstream repository, the source commit and the version the build carries', () => {
  expect(pkg.name).toBe('azure-functions-nodejs-worker');
  expect(pkg.repository.url).toBe('https://github.com/Azure/azure-functions-nodejs-worker.git');
  expect(readme).toContain('<https://github.com/Azure/azure-functions-nodejs-worker>');
  const commit = readme.match(/^\| Commit \| `([0-9a-f]+)`/m)?.[1];
  expect(commit).toMatch(/^[0-9a-f]{40}$/);
  expect(readme).toContain(`git checkout ${commit}`); // the build steps name the same commit
  expect(readme.match(/^\| Version \| (\S+) /m)?.[1]).toBe(pkg.version);
  expect(read('dist/src/worker-bundle.js')).toContain(`t.version="${pkg.version}"`);
});

test('every file the worker tests start or load is there', () => {
  const config = JSON.parse(read('worker.config.json')) as { description: { defaultWorkerPath: string } };
  const files = [
    config.description.defaultWorkerPath,
    'dist/src/worker-bundle.js',
    'protos/FunctionRpc.proto',
    'protos/shared/NullableTypes.proto',
    'protos/identity/ClaimsIdentityRpc.proto',
  ];
  expect(files[0]).toBe('dist/src/nodejsWorker.js');
  expect(files.filter((file) => !existsSync(join(VENDORED_WORKER_DIR, file)))).toEqual([]);
});

test('its entry refuses Node 24 by its own list of majors: the worker suites start the same bundle there through tests/support/unlistedNodeEntry.cjs, which can go once a vendored build lists v24', () => {
  const listed = /supportedVersions = \[([^\]]*)\]/.exec(read('dist/src/nodejsWorker.js'))?.[1];
  expect(listed).toContain("'v22'");
  expect(listed).not.toContain("'v24'");
  expect(readme).toContain('tests/support/unlistedNodeEntry.cjs');
});
