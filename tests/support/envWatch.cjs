/**
 * Preloaded into a worker under test (`node --require`): replaces `process.env` with a proxy that
 * notes every variable the process reads, and writes their names, one per line, to ENV_WATCH_FILE when
 * the process exits. tests/integration/telemetry.test.ts checks them against the table of telemetry
 * settings in docs/contributing.md §9: a read the static scan of the bundle could not see (a name built at run
 * time) is caught here.
 *
 * ENV_WATCH_LATE=<NAME>=<value>: a fault no real setting produces, to prove what the service does
 * when the SDK fails to start: <NAME> reads as unset the first time (when the service checks its
 * settings) and as <value> afterwards (when the SDK starts).
 */
'use strict';
const { writeFileSync } = require('node:fs');

const real = process.env;
const file = real.ENV_WATCH_FILE;
const late = /^([^=]+)=(.*)$/.exec(real.ENV_WATCH_LATE ?? '');
const read = new Set();
let lateReads = 0;

const lookup = (name) => {
  if (late !== null && name === late[1]) return lateReads++ === 0 ? undefined : late[2];
  return real[name];
};

process.env = new Proxy(real, {
  get(target, name) {
    if (typeof name !== 'string') return Reflect.get(target, name);
    read.add(name);
    return lookup(name);
  },
  has(target, name) {
    if (typeof name === 'string') read.add(name);
    return late !== null && name === late[1] ? lookup(name) !== undefined : Reflect.has(target, name);
  },
  getOwnPropertyDescriptor(target, name) {
    if (typeof name === 'string') read.add(name);
    return Reflect.getOwnPropertyDescriptor(target, name);
  },
  // Writes go to the real environment as plain assignments (Node refuses partial property descriptors).
  set(target, name, value) {
    target[name] = value;
    return true;
  },
  deleteProperty(target, name) {
    return delete target[name];
  },
  ownKeys(target) {
    read.add('*'); // the whole environment enumerated
    return Reflect.ownKeys(target);
  },
});

process.on('exit', () => {
  if (file !== undefined) writeFileSync(file, [...read].sort().join('\n'));
});
