/**
 * esbuild plugins of scripts/bundle.ts: what goes into the deployable bundle, and in which form.
 */
import type { Plugin } from 'esbuild';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';

/**
 * `@azure/data-tables` hands the pipeline `@azure/core-xml` (with fast-xml-parser, about 80 KB) for
 * XML answers, which only account-level operations get; this service's reads and transactions are
 * JSON. The bundle gets a stand-in that loads the real module, built apart as coreXml.js, on first use.
 */
const XML_ON_FIRST_USE = `
let xml;
const load = () => (xml ??= require('./coreXml.js'));
exports.parseXML = (...args) => load().parseXML(...args);
exports.stringifyXML = (...args) => load().stringifyXML(...args);
exports.XML_ATTRKEY = '$';
exports.XML_CHARKEY = '_';
`;
export const xmlOnFirstUse: Plugin = {
  name: 'xml-on-first-use',
  setup(b) {
    b.onResolve({ filter: /^@azure\/core-xml$/ }, () => ({ path: 'core-xml', namespace: 'on-first-use' }));
    b.onResolve({ filter: /^\.\/coreXml\.js$/ }, () => ({ path: './coreXml.js', external: true }));
    b.onLoad({ filter: /.*/, namespace: 'on-first-use' }, () => ({ contents: XML_ON_FIRST_USE, loader: 'js' }));
  },
};

/**
 * Packages that applicationinsights / @azure/monitor-opentelemetry / @opentelemetry/sdk-node import
 * statically but only use for settings this service never sets (OTEL_*_EXPORTER=otlp|zipkin|prometheus,
 * OTEL_PROPAGATORS=b3|jaeger, an OTel configuration file, OTLP export from applicationinsights, the
 * browser SDK loader, and the instrumentations turned off in lib/telemetry.ts). In the bundle each is a
 * stand-in with the same export names whose classes and functions throw when used: gRPC, protobuf,
 * yaml and ~1.5 MB of code are not shipped. Loud, not silent: a setting that needs one fails at start.
 */
export const NOT_SHIPPED = [
  '@opentelemetry/configuration',
  '@opentelemetry/exporter-trace-otlp-grpc',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-logs-otlp-grpc',
  '@opentelemetry/exporter-logs-otlp-proto',
  '@opentelemetry/exporter-logs-otlp-http',
  '@opentelemetry/exporter-metrics-otlp-grpc',
  '@opentelemetry/exporter-metrics-otlp-proto',
  '@opentelemetry/exporter-metrics-otlp-http',
  '@opentelemetry/otlp-grpc-exporter-base',
  '@opentelemetry/exporter-prometheus',
  '@opentelemetry/exporter-zipkin',
  '@opentelemetry/propagator-b3',
  '@opentelemetry/propagator-jaeger',
  '@microsoft/applicationinsights-web-snippet',
  '@opentelemetry/instrumentation-bunyan',
  '@opentelemetry/instrumentation-winston',
  '@opentelemetry/instrumentation-console',
  '@opentelemetry/instrumentation-mongodb',
  '@opentelemetry/instrumentation-mysql',
  '@opentelemetry/instrumentation-pg',
  '@opentelemetry/instrumentation-redis',
  '@opentelemetry/instrumentation-redis-4',
  '@opentelemetry/instrumentation-http',
] as const;

/**
 * Files inside @azure/monitor-opentelemetry for features this service turns off in lib/telemetry.ts
 * (live metrics: `enableLiveMetrics: false`) or never turns on (the browser SDK loader), stood in
 * the same way.
 */
export const NOT_SHIPPED_FILES = [
  '@azure/monitor-opentelemetry/dist/commonjs/metrics/quickpulse/liveMetrics.js',
  '@azure/monitor-opentelemetry/dist/commonjs/browserSdkLoader/browserSdkLoader.js',
] as const;

/** Where the bundle imports a stand-in, and what could make that code use it. */
export interface StandInPath {
  /** The importing module, as its path under node_modules. */
  readonly importer: string;
  /** The stand-ins it imports (a NOT_SHIPPED package, or a NOT_SHIPPED_FILES file). */
  readonly standIns: readonly string[];
  /** Each setting (`NAME=value`) that would make it use one; every one is refused by lib/config.ts. */
  readonly reachedBy: readonly string[];
  /** Why no other setting reaches it. */
  readonly why: string;
}

const OTLP_TRACE = ['@opentelemetry/exporter-trace-otlp-grpc', '@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/exporter-trace-otlp-http'];
const OTLP_LOGS = ['@opentelemetry/exporter-logs-otlp-grpc', '@opentelemetry/exporter-logs-otlp-proto', '@opentelemetry/exporter-logs-otlp-http'];
const OTLP_METRICS = ['@opentelemetry/exporter-metrics-otlp-grpc', '@opentelemetry/exporter-metrics-otlp-proto', '@opentelemetry/exporter-metrics-otlp-http'];
/** JSON configuration reaches every option of the SDK, so it can turn any of these on. */
const JSON_CONFIGURATION = [
  'APPLICATIONINSIGHTS_CONFIGURATION_CONTENT={"enableLiveMetrics":true}',
  'APPLICATIONINSIGHTS_CONFIGURATION_FILE=/home/site/applicationinsights.json',
];
const MO = '@azure/monitor-opentelemetry/dist/commonjs';

/**
 * Every import of a stand-in in the bundle (read from esbuild's metafile), with the settings through
 * which the importing code could use it. The package test fails on an import not listed here: a new
 * code path to a part the package does not carry must be looked at, and its settings refused, before it
 * ships (docs/contributing.md §9). tests/unit/config.test.ts refuses each `reachedBy`.
 */
export const STAND_IN_PATHS: readonly StandInPath[] = [
  {
    importer: '@opentelemetry/sdk-node/build/src/utils.js',
    standIns: [
      ...OTLP_TRACE,
      '@opentelemetry/exporter-zipkin',
      ...OTLP_METRICS,
      '@opentelemetry/otlp-grpc-exporter-base',
      '@opentelemetry/configuration',
      '@opentelemetry/propagator-b3',
      '@opentelemetry/propagator-jaeger',
    ],
    reachedBy: ['OTEL_PROPAGATORS=b3', 'OTEL_PROPAGATORS=b3multi', 'OTEL_PROPAGATORS=jaeger'],
    why: 'exporters and metric readers are built from OTEL_*_EXPORTER only when NodeSDK is given none, and useAzureMonitor always gives its own; configuration serves only startNodeSDK, which nothing calls',
  },
  {
    importer: '@opentelemetry/sdk-node/build/src/sdk.js',
    standIns: [...OTLP_LOGS, '@opentelemetry/exporter-prometheus'],
    reachedBy: [],
    why: 'built from OTEL_LOGS_EXPORTER / OTEL_METRICS_EXPORTER only without log record processors or metric readers, which useAzureMonitor always gives',
  },
  {
    importer: '@opentelemetry/sdk-node/build/src/create-from-config.js',
    standIns: OTLP_LOGS,
    reachedBy: [],
    why: 'startNodeSDK (declarative configuration), which nothing calls',
  },
  {
    importer: '@opentelemetry/sdk-node/build/src/start.js',
    standIns: ['@opentelemetry/configuration'],
    reachedBy: [],
    why: 'startNodeSDK, which nothing calls',
  },
  {
    importer: 'applicationinsights/out/src/main.js',
    standIns: ['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-logs-otlp-http'],
    reachedBy: JSON_CONFIGURATION,
    why: 'OTLP export is turned on only by otlp*ExporterConfig options, which lib/telemetry.ts does not set',
  },
  {
    importer: 'applicationinsights/out/src/shim/telemetryClientProvider.js',
    standIns: ['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-logs-otlp-http', '@opentelemetry/exporter-metrics-otlp-http'],
    reachedBy: [],
    why: 'used only by a TelemetryClient made with useGlobalProviders: false, which lib/telemetry.ts does not make',
  },
  {
    importer: `${MO}/index.js`,
    standIns: [`${MO}/browserSdkLoader/browserSdkLoader.js`],
    reachedBy: ['APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED=false', ...JSON_CONFIGURATION],
    why: 'the browser SDK loader starts only when asked for',
  },
  {
    importer: `${MO}/metrics/handler.js`,
    standIns: [`${MO}/metrics/quickpulse/liveMetrics.js`],
    reachedBy: JSON_CONFIGURATION,
    why: 'lib/telemetry.ts sets enableLiveMetrics: false',
  },
  {
    importer: `${MO}/logs/handler.js`,
    standIns: ['@opentelemetry/instrumentation-bunyan', '@opentelemetry/instrumentation-winston', '@opentelemetry/instrumentation-console'],
    reachedBy: JSON_CONFIGURATION,
    why: 'lib/telemetry.ts turns console and external-logger collection off',
  },
  {
    importer: `${MO}/traces/handler.js`,
    standIns: [
      '@opentelemetry/instrumentation-mongodb',
      '@opentelemetry/instrumentation-mysql',
      '@opentelemetry/instrumentation-pg',
      '@opentelemetry/instrumentation-redis',
      '@opentelemetry/instrumentation-http',
    ],
    reachedBy: JSON_CONFIGURATION,
    why: 'lib/telemetry.ts turns these instrumentations off (http: with both enableAutoCollectRequests and enableAutoCollectDependencies false, which the shim needs to leave it off); Table Storage is recorded per round and the identity provider by tracedFetch',
  },
];

/** A module with the real one's export names (read at build time) whose functions and classes throw when used. */
function standIn(name: string, modulePath: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const real = require(modulePath) as Record<string, unknown>;
  const names = Object.keys(real).filter((k) => k !== '__esModule' && k !== 'default');
  return (
    `const fail = (what) => { const e = new Error(${JSON.stringify(name)} + ': ' + what + ' is not in the bundle (scripts/bundle.ts NOT_SHIPPED)'); console.error(e.message); throw e; };\n` +
    `const standIn = (what) => class { constructor() { fail(what); } static [Symbol.hasInstance]() { return false; } };\n` +
    names.map((k) => `exports[${JSON.stringify(k)}] = ${typeof real[k] === 'function' ? `standIn(${JSON.stringify(k)})` : `undefined`};`).join('\n')
  );
}

export const notShipped: Plugin = {
  name: 'not-shipped',
  setup(b) {
    const filter = new RegExp(`^(${NOT_SHIPPED.map((n) => n.replace(/[/\-.@]/g, (c) => `\\${c}`)).join('|')})$`);
    b.onResolve({ filter }, (args) => ({
      path: args.path,
      namespace: 'not-shipped',
      pluginData: require.resolve(args.path, { paths: [args.resolveDir] }),
    }));
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const path = resolve(args.resolveDir, args.path);
      const file = NOT_SHIPPED_FILES.find((f) => path.endsWith(`${sep}node_modules${sep}${f.split('/').join(sep)}`));
      return file === undefined ? undefined : { path: file, namespace: 'not-shipped', pluginData: path };
    });
    b.onLoad({ filter: /.*/, namespace: 'not-shipped' }, (args) => ({ contents: standIn(args.path, args.pluginData as string), loader: 'js' }));
  },
};

/**
 * The OpenTelemetry packages under applicationinsights come in several nested copies of nearby
 * versions (npm keeps each dependent's exact pin: seven of @opentelemetry/core 2.9–2.12, three of
 * sdk-trace, two of sdk-metrics …), a fifth of the bundle. In the bundle each such package is the one
 * copy of the highest version installed within its compatibility class: its major version, or its
 * minor below 1.0, where OpenTelemetry JS may break at any minor.
 */
export const ONE_COPY = /^(@opentelemetry\/[^/]+|import-in-the-middle|require-in-the-middle|@azure\/opentelemetry-instrumentation-azure-sdk)(\/.*)?$/;

/**
 * Steps between 0.x minors merged anyway, each one checked: the telemetry suite
 * (tests/integration/telemetry.test.ts) runs under the real worker on the bundle that merges them.
 * `<package> <from>` → `<to>`. A step not listed leaves two copies, which the package test refuses
 * until the step is checked and listed here (docs/decisions/0105-one-copy-of-each-opentelemetry-package-and-one-build-of.md).
 */
export const CHECKED_STEPS: Readonly<Record<string, string>> = {
  '@opentelemetry/instrumentation 0.211': '0.221',
  '@opentelemetry/api-logs 0.211': '0.221',
  '@opentelemetry/api-logs 0.220': '0.221',
  '@opentelemetry/sdk-logs 0.220': '0.221',
};

/** A version's compatibility class: its major, or `0.<minor>` below 1.0. */
export const compatibilityOf = (version: string): string => {
  const [major, minor] = version.split('.');
  return major === '0' ? `0.${minor}` : major;
};

/** True when `a` is a later version than `b` (a release after its own prereleases). */
export function isNewer(a: string, b: string): boolean {
  const [coreA, preA] = a.split('-', 2);
  const [coreB, preB] = b.split('-', 2);
  const [x, y] = [coreA.split('.').map(Number), coreB.split('.').map(Number)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
  if (preA === undefined || preB === undefined) return preA === undefined && preB !== undefined;
  return preA.localeCompare(preB, 'en', { numeric: true }) > 0;
}

/** For each `<package> <class>`, the folder and version of its highest installed copy (the shallowest of equals). */
function newestCopies(root: string): Map<string, { dir: string; version: string }> {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; dev?: boolean }> };
  const chosen = new Map<string, { dir: string; version: string; path: string }>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const name = /node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(path)?.[1];
    if (name === undefined || entry.version === undefined || entry.dev === true || !ONE_COPY.test(name)) continue;
    const key = `${name} ${compatibilityOf(entry.version)}`;
    const best = chosen.get(key);
    const shallower = best !== undefined && entry.version === best.version && path.length < best.path.length;
    if (best === undefined || isNewer(entry.version, best.version) || shallower) chosen.set(key, { dir: join(root, path), version: entry.version, path });
  }
  return chosen;
}

/** The version of `name` that Node would load from `dir`: the nearest node_modules/<name> up the tree. */
function installedVersion(dir: string, name: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const manifest = join(at, 'node_modules', name, 'package.json');
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
    if (dirname(at) === at) return undefined;
  }
}

export const oneCopy = (root: string): Plugin => ({
  name: 'one-copy',
  setup(b) {
    const chosen = newestCopies(root);
    b.onResolve({ filter: ONE_COPY }, async (args) => {
      if (args.pluginData === 'one-copy') return undefined;
      const name = ONE_COPY.exec(args.path)?.[1] as string;
      // The importer's own copy decides the class; a checked step moves it up.
      const ownVersion = installedVersion(args.resolveDir, name);
      if (ownVersion === undefined) return undefined;
      const own = compatibilityOf(ownVersion);
      const best = chosen.get(`${name} ${CHECKED_STEPS[`${name} ${own}`] ?? own}`);
      if (best === undefined) return undefined;
      return b.resolve(args.path, { kind: args.kind, resolveDir: best.dir, importer: args.importer, pluginData: 'one-copy' });
    });
  },
});

/**
 * The Azure SDK core packages ship an ESM and a CommonJS build. @azure/data-tables imports them
 * (ESM) and the Application Insights exporter requires them (CommonJS), which would put both builds
 * of each in the bundle: twice the code, and two copies of classes such as RestError. Resolved here
 * as ESM for both, so there is one of each, tree-shaken.
 */
const SDK_CORE = /^(@azure\/(core-[^/]+|logger|abort-controller)|@azure-rest\/core-client|@typespec\/ts-http-runtime)(\/.*)?$/;
export const oneDialect: Plugin = {
  name: 'one-dialect',
  setup(b) {
    b.onResolve({ filter: SDK_CORE }, (args) =>
      args.kind === 'require-call' && args.pluginData !== 'one-dialect'
        ? b.resolve(args.path, { kind: 'import-statement', resolveDir: args.resolveDir, importer: args.importer, pluginData: 'one-dialect' })
        : undefined,
    );
  },
};

/**
 * The distro's Azure Functions hook (@azure/monitor-opentelemetry's AzureFunctionsHook) registers a
 * preInvocation hook that runs each invocation in the trace context of its traceParent. lib/telemetry.ts
 * `inInvocation` already does exactly that, for every invocation, in the worker and in the dev host; with
 * the distro's hook as well, the worker ran a hook per invocation and sent the host two Debug log
 * messages about it over gRPC ("Executing 1 "preInvocation" hooks", "Executed …"). In the bundle the
 * hook is a class with the real one's methods that registers nothing. tests/unit/bundlePlugins.test.ts
 * holds the real class to those methods, so a distro that gives it more to do fails there first.
 */
export const FUNCTIONS_HOOK = `${MO}/traces/azureFnHook.js`;
export const FUNCTIONS_HOOK_STAND_IN = 'exports.AzureFunctionsHook = class AzureFunctionsHook { shutdown() {} };';
export const noFunctionsHook: Plugin = {
  name: 'no-functions-hook',
  setup(b) {
    b.onResolve({ filter: /^\.\/azureFnHook\.js$/ }, (args) =>
      resolve(args.resolveDir, args.path).endsWith(`${sep}node_modules${sep}${FUNCTIONS_HOOK.split('/').join(sep)}`)
        ? { path: FUNCTIONS_HOOK, namespace: 'no-functions-hook' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'no-functions-hook' }, () => ({ contents: FUNCTIONS_HOOK_STAND_IN, loader: 'js' }));
  },
};

/**
 * `@opentelemetry/semantic-conventions` names every attribute of every convention, deprecated ones
 * included: about 200 KB that the exporter, the distro and the shim `require()` whole, and that would run
 * at every start with telemetry on, for the few dozen names they read. Each such require gets a module of
 * its own exporting only the names its importer reads, from the package's ESM build (which esbuild
 * tree-shakes). The build fails, naming the importer, when an importer uses the module in any way
 * other than reading a property by name, or reads a name the package does not export
 * (docs/decisions/0223-telemetry-start-up-what-it-runs.md).
 */
const SEMCONV = '@opentelemetry/semantic-conventions';
export const semconvNamesUsed: Plugin = {
  name: 'semconv-names-used',
  setup(b) {
    b.onResolve({ filter: /^@opentelemetry\/semantic-conventions$/ }, (args) =>
      // Named by its importer, as under node_modules (the licence notices take only real packages' paths).
      args.kind === 'require-call'
        ? {
            path: args.importer.slice(args.importer.lastIndexOf(`node_modules${sep}`) + 'node_modules/'.length),
            namespace: 'semconv-names-used',
            pluginData: args.importer,
          }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'semconv-names-used' }, async (args) => {
      const importer = args.pluginData as string;
      const names = namesRead(readFileSync(importer, 'utf8'), SEMCONV);
      if (typeof names === 'string') return { errors: [{ text: `${args.path}: ${names}` }] };
      const esm = await b.resolve(SEMCONV, { kind: 'import-statement', resolveDir: dirname(importer) });
      if (esm.errors.length > 0) return { errors: esm.errors };
      return { contents: `export { ${[...names].sort().join(', ')} } from ${JSON.stringify(esm.path)};`, loader: 'js', resolveDir: dirname(importer) };
    });
  },
};

/**
 * The names a CommonJS module reads from `require(<moduleName>)`, each binding used only as
 * `binding.NAME` (TypeScript's CommonJS output); otherwise why not, as a sentence.
 */
export function namesRead(source: string, moduleName: string): Set<string> | string {
  const required = `require(${JSON.stringify(moduleName)})`;
  const declarations = [...source.matchAll(/\b(?:var|let|const)\s+([A-Za-z_$][\w$]*)\s*=\s*require\("([^"]+)"\)/g)].filter((m) => m[2] === moduleName);
  if (declarations.length === 0 || source.split(required).length - 1 !== declarations.length) return `uses ${required} other than as \`const x = ${required}\``;
  const declared = new Set(declarations.map((m) => m.index + m[0].indexOf(m[1], m[0].indexOf(' '))));
  const names = new Set<string>();
  for (const binding of new Set(declarations.map((m) => m[1]))) {
    // Every mention not after a lone `.` (another object's property of that name), spreads included.
    for (const use of source.matchAll(new RegExp(`(?<![\\w$])(?<!(?:^|[^.])\\.)${binding.replace(/\$/g, '\\$')}(?![\\w$])(\\.[A-Za-z_$][\\w$]*)?`, 'g'))) {
      if (use[1] !== undefined) names.add(use[1].slice(1));
      else if (!declared.has(use.index)) return `uses ${binding} (${required}) whole, not only by name`;
    }
  }
  return names;
}

/** lib/managedIdentity is required on demand (lib/identityOnFirstUse.ts): it stays a file of its own beside the bundle. */
export const managedIdentityApart: Plugin = {
  name: 'managed-identity-apart',
  setup(b) {
    b.onResolve({ filter: /(^|\/)managedIdentity$/ }, () => ({ path: './managedIdentity.js', external: true }));
  },
};
