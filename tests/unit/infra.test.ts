/**
 * infra/ checked offline (no Azure here): every .bicep file parses with a real Bicep grammar
 * (tree-sitter-bicep's WebAssembly parser run by web-tree-sitter), references resolve, modules are
 * called with the parameters they declare, the environment files fit main.bicep's parameters, the
 * app settings cover every setting the service reads (derived from lib/config's SETTING_NAMES), and
 * the security properties, role assignments and alerts are the ones docs/deploy.md describes.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import Parser from 'web-tree-sitter';
import { SETTING_NAMES, loadConfig, type SettingName, type Settings } from '../../lib/config';
import { LIMITS } from '../../lib/limits';
import { COMMIT_OUTCOME_UNKNOWN, EVENT_NAME, KEY_OUTCOME_PENDING, type Outcome } from '../../lib/telemetry';
import {
  AZURE_AUDIENCE,
  GITHUB_ISSUER,
  EARLIER_CREDENTIALS,
  MAX_CREDENTIALS_PER_IDENTITY,
  SUBJECT_CLAIM_KEYS,
  bootstrapCredentials,
  githubSubject,
  githubToken,
  matching,
  type FederatedCredential,
  type GitHubJob,
  type GitHubRepository,
  type OidcToken,
} from '../support/oidcTrust';
import { BicepFile as BicepEvaluation, bicepParser, type Value as EvaluatedValue } from '../support/bicepEvaluation';
import { rolesNamed } from '../support/builtInRoles';
import { azCallsOf, optionOf } from '../support/docCommands';
import { actionMatches, assignmentsOf, bootstrapRole, builtInTableRoles, grants, tableAccess, tableOperations, type Permission } from '../support/tableRbac';

type SyntaxNode = Parser.SyntaxNode;

const ROOT = resolve(__dirname, '../..');
const INFRA = join(ROOT, 'infra');
const MAIN = join(INFRA, 'main.bicep');
const BOOTSTRAP = join(INFRA, 'bootstrap.bicep');
const ENTRY_POINTS = [MAIN, BOOTSTRAP];
const ENVIRONMENTS = ['dev', 'prod'] as const;
const GRAMMAR = require.resolve('tree-sitter-bicep/tree-sitter-bicep.wasm');

// ----------------------------------------------------------------------------- the Bicep model

/** A Bicep expression that is not a literal, kept as its source text. */
class Expr {
  constructor(readonly text: string) {}
}
type Value = string | number | boolean | null | Expr | Value[] | { [key: string]: Value };
type ObjectValue = { [key: string]: Value };

interface Param {
  readonly name: string;
  readonly type: string;
  readonly hasDefault: boolean;
  readonly defaultValue?: Value;
  readonly decorators: Record<string, Value[]>;
}

interface Resource {
  readonly symbol: string;
  /** Resource type with its API version, `Microsoft.Web/sites@2024-04-01`. */
  readonly typeWithVersion: string;
  readonly type: string;
  readonly existing: boolean;
  readonly body: ObjectValue;
}

interface ModuleCall {
  readonly symbol: string;
  readonly path: string;
  readonly params: ObjectValue;
  readonly body: ObjectValue;
}

interface BicepFile {
  readonly path: string;
  readonly name: string;
  readonly root: SyntaxNode;
  readonly syntaxErrors: string[];
  /** Extension aliases the file declares (`extension microsoftGraphV1`). */
  readonly extensions: string[];
  readonly params: Map<string, Param>;
  readonly vars: Map<string, SyntaxNode>;
  readonly outputs: Set<string>;
  readonly resources: Resource[];
  readonly modules: ModuleCall[];
}

const ESCAPES: Record<string, string> = { '\\\\': '\\', "\\'": "'", '\\n': '\n', '\\r': '\r', '\\t': '\t', '\\$': '$' };

const named = (node: SyntaxNode): SyntaxNode[] => node.namedChildren.filter((c) => c.type !== 'comment' && c.type !== 'diagnostic_comment');

/** The literal value of a node; anything else (references, calls, interpolated strings) as an Expr. */
/** A value that must be a string in well-formed Bicep (a key, a type, a path). */
function stringOf(value: Value | undefined): string {
  if (typeof value !== 'string') throw new Error(`expected a string, got ${JSON.stringify(value)}`);
  return value;
}

function literal(node: SyntaxNode): Value {
  switch (node.type) {
    case 'string':
      if (node.namedChildren.some((c) => c.type === 'interpolation')) return new Expr(node.text);
      return node.namedChildren.map((c) => (c.type === 'escape_sequence' ? (ESCAPES[c.text] ?? c.text) : c.text)).join('');
    case 'number':
      return Number(node.text);
    case 'boolean':
      return node.text === 'true';
    case 'null':
      return null;
    case 'array':
      return named(node).map(literal);
    case 'object': {
      const object: ObjectValue = {};
      for (const property of named(node)) {
        const [key, value] = named(property);
        if (property.type !== 'object_property' || key.type === 'resource_declaration') continue; // nested child resource
        const name = key.type === 'string' ? literal(key) : undefined; // an interpolated key ('${id}') is kept as written
        object[typeof name === 'string' ? name : key.text] = literal(value);
      }
      return object;
    }
    default:
      return new Expr(node.text);
  }
}

/** The object a resource or module declaration assigns, under `if (…)` and `[for …: …]`. */
function bodyOf(node: SyntaxNode): ObjectValue {
  const value = named(node).find((c) => ['object', 'if_statement', 'for_statement'].includes(c.type));
  if (value === undefined) throw new Error(`no body: ${node.text.slice(0, 80)}`);
  if (value.type === 'object') return literal(value) as ObjectValue;
  const inner = value.type === 'for_statement' ? value.childForFieldName('body') : named(value).at(-1);
  if (inner === null || inner === undefined) throw new Error(`no body: ${node.text.slice(0, 80)}`);
  return inner.type === 'object' ? (literal(inner) as ObjectValue) : bodyOf(inner.parent as SyntaxNode);
}

function decoratorsOf(declaration: SyntaxNode): Record<string, Value[]> {
  let previous = declaration.previousNamedSibling;
  while (previous !== null && previous.type === 'comment') previous = previous.previousNamedSibling;
  const decorators: Record<string, Value[]> = {};
  if (previous === null || previous.type !== 'decorators') return decorators;
  for (const decorator of named(previous)) {
    const call = named(decorator)[0];
    if (call?.type !== 'call_expression') continue;
    const args = call.childForFieldName('arguments');
    decorators[call.childForFieldName('function')?.text ?? ''] = args === null ? [] : named(args).map(literal);
  }
  return decorators;
}

function syntaxErrors(root: SyntaxNode): string[] {
  const errors: string[] = [];
  const visit = (node: SyntaxNode): void => {
    if (node.type === 'ERROR' || node.isMissing) {
      errors.push(
        `${node.isMissing ? `MISSING "${node.type}"` : 'ERROR'} at ${node.startPosition.row + 1}:${node.startPosition.column + 1}: ${node.text.slice(0, 60)}`,
      );
    }
    for (const child of node.children) visit(child);
  };
  visit(root);
  return errors;
}

/**
 * `extension <alias>` statements (Bicep 0.30+), and the text with them blanked: tree-sitter-bicep 1.1.0
 * predates the keyword (it knows the older `import`/`provider` forms only). Blanking keeps every other
 * position as written; the aliases are checked against infra/bicepconfig.json instead.
 */
const EXTENSION_STATEMENT = /^extension[ \t]+([A-Za-z_][A-Za-z0-9_]*)(?=[ \t]*$)/gm;
function withoutExtensions(source: string): { text: string; extensions: string[] } {
  const extensions = [...source.matchAll(EXTENSION_STATEMENT)].map((m) => m[1]);
  return { text: source.replace(EXTENSION_STATEMENT, (statement) => ' '.repeat(statement.length)), extensions };
}

function model(parser: Parser, path: string): BicepFile {
  const { text, extensions } = withoutExtensions(readFileSync(path, 'utf8'));
  const root = parser.parse(text).rootNode;
  const file: BicepFile = {
    path,
    name: relative(ROOT, path),
    root,
    extensions,
    syntaxErrors: syntaxErrors(root),
    params: new Map(),
    vars: new Map(),
    outputs: new Set(),
    resources: [],
    modules: [],
  };
  for (const node of named(root)) {
    const [symbol, second] = named(node);
    switch (node.type) {
      case 'parameter_declaration': {
        const rest = named(node).slice(2);
        file.params.set(symbol.text, {
          name: symbol.text,
          type: second.text,
          hasDefault: rest.length > 0,
          defaultValue: rest.length > 0 ? literal(rest[0]) : undefined,
          decorators: decoratorsOf(node),
        });
        break;
      }
      case 'variable_declaration':
        file.vars.set(symbol.text, named(node)[1]);
        break;
      case 'output_declaration':
        file.outputs.add(symbol.text);
        break;
      case 'resource_declaration': {
        const typeWithVersion = stringOf(literal(second));
        file.resources.push({
          symbol: symbol.text,
          typeWithVersion,
          type: typeWithVersion.split('@')[0],
          existing: node.children.some((c) => c.type === 'existing'),
          body: bodyOf(node),
        });
        break;
      }
      case 'module_declaration': {
        const body = bodyOf(node);
        file.modules.push({ symbol: symbol.text, path: stringOf(literal(second)), params: (body.params as ObjectValue) ?? {}, body });
        break;
      }
      default:
        break;
    }
  }
  return file;
}

/** Every identifier that is used but not declared in the file (Bicep would reject the template). */
function unresolvedIdentifiers(file: BicepFile): string[] {
  const declared = new Set<string>([...file.params.keys(), ...file.vars.keys(), ...file.resources.map((r) => r.symbol), ...file.modules.map((m) => m.symbol)]);
  const visitDeclarations = (node: SyntaxNode): void => {
    if (node.type === 'loop_variable' || node.type === 'loop_enumerator') declared.add(node.text);
    if (node.type === 'for_statement') {
      const initializer = node.childForFieldName('initializer');
      if (initializer !== null) declared.add(initializer.text);
    }
    for (const child of node.namedChildren) visitDeclarations(child);
  };
  visitDeclarations(file.root);
  const same = (a: SyntaxNode | null | undefined, b: SyntaxNode): boolean =>
    a !== null && a !== undefined && a.startIndex === b.startIndex && a.endIndex === b.endIndex;
  const unresolved: string[] = [];
  const visit = (node: SyntaxNode): void => {
    const parent = node.parent;
    if (node.type === 'identifier' && parent !== null) {
      const isDeclarationName =
        ['parameter_declaration', 'variable_declaration', 'resource_declaration', 'module_declaration', 'output_declaration'].includes(parent.type) &&
        same(named(parent)[0], node);
      const isKey = parent.type === 'object_property' && same(named(parent)[0], node);
      const isFunction = parent.type === 'call_expression' && same(parent.childForFieldName('function'), node);
      const isChildResource = parent.type === 'resource_expression' && same(parent.childForFieldName('resource'), node);
      const isLoopVariable = parent.type === 'for_statement' && same(parent.childForFieldName('initializer'), node);
      if (!isDeclarationName && !isKey && !isFunction && !isChildResource && !isLoopVariable && !declared.has(node.text)) {
        unresolved.push(`${node.text} at ${node.startPosition.row + 1}:${node.startPosition.column + 1}`);
      }
    }
    for (const child of node.namedChildren) visit(child);
  };
  visit(file.root);
  return unresolved;
}

/** `<module>.outputs.<name>` references whose module declares no such output. */
function unknownModuleOutputs(file: BicepFile, files: Map<string, BicepFile>): string[] {
  const unknown: string[] = [];
  const visit = (node: SyntaxNode): void => {
    if (node.type === 'member_expression') {
      const object = node.childForFieldName('object');
      const module =
        object?.type === 'member_expression' && object.childForFieldName('property')?.text === 'outputs'
          ? file.modules.find((m) => m.symbol === object.childForFieldName('object')?.text)
          : undefined;
      const output = node.childForFieldName('property')?.text ?? '';
      const target = module === undefined ? undefined : files.get(resolve(dirname(file.path), module.path));
      if (module !== undefined && !target?.outputs.has(output)) unknown.push(`${module.symbol}.outputs.${output}`);
    }
    for (const child of node.namedChildren) visit(child);
  };
  visit(file.root);
  return unknown;
}

function bicepFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return bicepFiles(path);
    return e.name.endsWith('.bicep') ? [path] : [];
  });
}

/** The value at a property path of a resource body, e.g. `properties.siteConfig.ftpsState`. */
function at(value: Value | undefined, path: string): Value | undefined {
  let current: Value | undefined = value;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || current instanceof Expr || Array.isArray(current)) return undefined;
    current = current[key];
  }
  return current;
}

const exprText = (value: Value | undefined): string => (value instanceof Expr ? value.text : JSON.stringify(value));

// ----------------------------------------------------------------------------- loading

let parser: Parser;
const files = new Map<string, BicepFile>();
const FILE_PATHS = bicepFiles(INFRA).sort();

function file(path: string): BicepFile {
  const found = files.get(path);
  if (found === undefined) throw new Error(`not parsed: ${path}`);
  return found;
}
const mainFile = (): BicepFile => file(MAIN);
const moduleFile = (name: string): BicepFile => file(join(INFRA, 'modules', `${name}.bicep`));
const mainModule = (symbol: string): ModuleCall => {
  const found = mainFile().modules.find((m) => m.symbol === symbol);
  if (found === undefined) throw new Error(`main.bicep calls no module ${symbol}`);
  return found;
};
function resourceOf(bicep: BicepFile, type: string): Resource {
  const found = bicep.resources.filter((r) => r.type === type && !r.existing);
  if (found.length !== 1) throw new Error(`${bicep.name}: expected one ${type}, found ${found.length}`);
  return found[0];
}

beforeAll(async () => {
  await Parser.init();
  const bicep = await Parser.Language.load(readFileSync(GRAMMAR));
  parser = new Parser();
  parser.setLanguage(bicep);
  for (const path of FILE_PATHS) files.set(path, model(parser, path));
});

// ----------------------------------------------------------------------------- parsing

describe('Bicep files parse with the tree-sitter Bicep grammar', () => {
  test('infra/ has main.bicep and its modules', () => {
    expect(FILE_PATHS).toContain(MAIN);
    expect(FILE_PATHS.length).toBeGreaterThan(1);
  });

  test.each(FILE_PATHS.map((p) => [relative(ROOT, p), p]))('%s has no ERROR or MISSING node', (_name, path) => {
    expect(file(path).syntaxErrors).toEqual([]);
  });

  test('the grammar rejects broken Bicep (the check can fail)', () => {
    const broken = ['param x int =\n', "resource r 'A/b@2020-01-01' = {\n  name: 'x'\n", "var y = [\n  'a'\n", "var s = 'open\n", 'output o string = (1 + 2\n'];
    for (const source of broken) expect(syntaxErrors(parser.parse(source).rootNode)).not.toEqual([]);
  });

  test("the grammar is loaded from tree-sitter-bicep's WebAssembly build (ABI 13–14 for web-tree-sitter 0.24)", () => {
    expect(parser.getLanguage().version).toBeGreaterThanOrEqual(13);
    expect(parser.getLanguage().version).toBeLessThanOrEqual(14);
  });
});

// ----------------------------------------------------------------------------- references

describe('modules, references and API versions', () => {
  test('main.bicep deploys at resource-group scope', () => {
    const scope = named(mainFile().root).find((n) => n.type === 'target_scope_assignment');
    expect(scope === undefined ? undefined : literal(named(scope)[0])).toBe('resourceGroup');
  });

  test.each(FILE_PATHS.map((p) => [relative(ROOT, p), p]))('%s: every identifier is declared', (_name, path) => {
    expect(unresolvedIdentifiers(file(path))).toEqual([]);
  });

  test.each(FILE_PATHS.map((p) => [relative(ROOT, p), p]))('%s: modules are local files called with exactly their parameters', (_name, path) => {
    const caller = file(path);
    for (const module of caller.modules) {
      expect(module.path).not.toMatch(/^(br|ts)[:/]/); // no registry modules: every line is here to read
      const target = files.get(resolve(dirname(path), module.path));
      expect({ module: module.symbol, found: target !== undefined }).toEqual({ module: module.symbol, found: true });
      if (target === undefined) continue;
      const given = Object.keys(module.params);
      expect({ module: module.symbol, undeclared: given.filter((p) => !target.params.has(p)) }).toEqual({ module: module.symbol, undeclared: [] });
      const required = [...target.params.values()].filter((p) => !p.hasDefault).map((p) => p.name);
      expect({ module: module.symbol, missing: required.filter((p) => !given.includes(p)) }).toEqual({ module: module.symbol, missing: [] });
    }
  });

  test.each(FILE_PATHS.map((p) => [relative(ROOT, p), p]))('%s: module outputs referenced exist', (_name, path) => {
    expect(unknownModuleOutputs(file(path), files)).toEqual([]);
  });

  test('every module file is used by main.bicep or the bootstrap, directly or through another module', () => {
    const used = new Set<string>();
    const visit = (path: string): void => {
      for (const m of file(path).modules) {
        const target = resolve(dirname(path), m.path);
        if (!used.has(target)) {
          used.add(target);
          visit(target);
        }
      }
    };
    for (const entry of ENTRY_POINTS) visit(entry);
    expect(FILE_PATHS.filter((p) => !ENTRY_POINTS.includes(p)).filter((p) => !used.has(p))).toEqual([]);
  });

  test('every resource has a full type and a pinned, non-preview API version (Microsoft Graph: v1.0, from a declared extension)', () => {
    const loose = [...files.values()].flatMap((f) =>
      f.resources
        .filter((r) =>
          r.type.startsWith('Microsoft.Graph/')
            ? !(r.typeWithVersion.endsWith('@v1.0') && f.extensions.includes('microsoftGraphV1'))
            : !/^[A-Za-z]+\.[A-Za-z]+\/[A-Za-z/]+@\d{4}-\d{2}-\d{2}$/.test(r.typeWithVersion),
        )
        .map((r) => `${f.name}: ${r.symbol} ${r.typeWithVersion}`),
    );
    expect(loose).toEqual([]);
  });
});

// ----------------------------------------------------------------------------- parameter files

interface ParameterFile {
  $schema: string;
  contentVersion: string;
  parameters: Record<string, { value?: unknown; reference?: unknown }>;
}
const parameterFile = (env: string): ParameterFile => JSON.parse(readFileSync(join(INFRA, 'env', `${env}.parameters.json`), 'utf8')) as ParameterFile;
const envValue = (env: string, name: string): unknown => parameterFile(env).parameters[name]?.value;

function typeProblems(param: Param, value: unknown): string[] {
  const problems: string[] = [];
  const is: Record<string, (v: unknown) => boolean> = {
    string: (v) => typeof v === 'string',
    int: (v) => Number.isInteger(v),
    bool: (v) => typeof v === 'boolean',
    array: (v) => Array.isArray(v),
    object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  };
  const check = is[param.type];
  if (check === undefined) return [`${param.name}: type ${param.type} is not one this test checks`];
  if (!check(value)) return [`${param.name}: ${JSON.stringify(value)} is not a ${param.type}`];
  const [allowed] = param.decorators.allowed ?? [];
  if (Array.isArray(allowed) && !allowed.some((a) => JSON.stringify(a) === JSON.stringify(value)))
    problems.push(`${param.name}: ${JSON.stringify(value)} is not one of ${JSON.stringify(allowed)}`);
  const bound = (name: string): number | undefined => (typeof param.decorators[name]?.[0] === 'number' ? param.decorators[name][0] : undefined);
  const size = typeof value === 'string' || Array.isArray(value) ? value.length : undefined;
  if (bound('minValue') !== undefined && (value as number) < (bound('minValue') as number)) problems.push(`${param.name}: below @minValue`);
  if (bound('maxValue') !== undefined && (value as number) > (bound('maxValue') as number)) problems.push(`${param.name}: above @maxValue`);
  if (bound('minLength') !== undefined && size !== undefined && size < (bound('minLength') as number)) problems.push(`${param.name}: shorter than @minLength`);
  if (bound('maxLength') !== undefined && size !== undefined && size > (bound('maxLength') as number)) problems.push(`${param.name}: longer than @maxLength`);
  return problems;
}

describe.each(ENVIRONMENTS)('infra/env/%s.parameters.json', (env) => {
  test('is an ARM deployment parameters file', () => {
    const json = parameterFile(env);
    expect(json.$schema).toBe('https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#');
    expect(json.contentVersion).toBe('1.0.0.0');
    for (const [name, entry] of Object.entries(json.parameters)) expect({ name, keys: Object.keys(entry) }).toEqual({ name, keys: ['value'] });
  });

  test('gives only parameters main.bicep declares, each of a compatible type and within its decorators', () => {
    const declared = mainFile().params;
    const problems = Object.entries(parameterFile(env).parameters).flatMap(([name, { value }]) => {
      const param = declared.get(name);
      return param === undefined ? [`${name}: not declared in main.bicep`] : typeProblems(param, value);
    });
    expect(problems).toEqual([]);
  });

  test('gives every parameter that has no default', () => {
    const given = Object.keys(parameterFile(env).parameters);
    const required = [...mainFile().params.values()].filter((p) => !p.hasDefault).map((p) => p.name);
    expect(required.filter((name) => !given.includes(name))).toEqual([]);
  });

  test('names its own environment', () => {
    expect(envValue(env, 'environmentName')).toBe(env);
  });

  test('holds no secret', () => {
    const text = readFileSync(join(INFRA, 'env', `${env}.parameters.json`), 'utf8');
    expect(text).not.toMatch(/AccountKey=|SharedAccessSignature|[?&]sig=|InstrumentationKey=|-----BEGIN|password|clientSecret/i);
    const secure = [...mainFile().params.values()].filter((p) => 'secure' in p.decorators).map((p) => p.name);
    expect(Object.keys(parameterFile(env).parameters).filter((name) => secure.includes(name))).toEqual([]);
  });
});

describe('environments differ where they should', () => {
  test('prod scales further than dev', () => {
    expect(envValue('prod', 'maximumInstanceCount') as number).toBeGreaterThan(envValue('dev', 'maximumInstanceCount') as number);
  });

  test('prod pages on-call through an action group, a placeholder until a person fills it in; dev does not page', () => {
    expect(envValue('prod', 'alertsEnabled')).toBe(true);
    // One line each, so that scripts/deploy.sh's refusal (it prints the lines) names the parameter.
    const prod = readFileSync(join(INFRA, 'env', 'prod.parameters.json'), 'utf8');
    for (const name of ['onCallActionGroupId', 'platformActionGroupId']) expect(prod).toContain(`"${name}": { "value": "REPLACE-WITH-`);
    expect(envValue('dev', 'alertsEnabled')).toBe(false);
  });

  test('prod keeps its data: zone-redundant storage, a delete lock, longer retention', () => {
    expect(envValue('prod', 'storageSku')).not.toBe('Standard_LRS');
    expect(envValue('prod', 'storageDeleteLock')).toBe(true);
    expect(envValue('prod', 'logRetentionInDays') as number).toBeGreaterThan(envValue('dev', 'logRetentionInDays') as number);
  });

  test('both environments require the app role', () => {
    for (const env of ENVIRONMENTS) expect(envValue(env, 'authRequiredRole')).toMatch(/\S/);
  });
});

// ----------------------------------------------------------------------------- secrets

describe('no secret in the templates', () => {
  const SECRET_NAME = /secret|password|key$|connectionstring|token|sas/i;
  /** Parameters whose names look secret but are not, each with the reason. */
  const NOT_SECRET: Record<string, string> = {
    appInsightsConnectionString: 'an address: the component has local authentication off, so it grants nothing',
  };

  test('a @secure() parameter has no default, and secret-looking parameters are @secure()', () => {
    const problems = [...files.values()].flatMap((f) =>
      [...f.params.values()].flatMap((p) => {
        if ('secure' in p.decorators) return p.hasDefault ? [`${f.name}: ${p.name} has a default`] : [];
        return SECRET_NAME.test(p.name) && !(p.name in NOT_SECRET) ? [`${f.name}: ${p.name} looks secret but is not @secure()`] : [];
      }),
    );
    expect(problems).toEqual([]);
  });

  test('no key is listed or embedded: everything authenticates with the managed identity', () => {
    for (const f of files.values()) {
      expect({
        file: f.name,
        text: f.root.text.match(/list(Keys|ConnectionStrings|Secrets|AccountSas|ServiceSas)\s*\(|AccountKey=|SharedAccessSignature/g),
      }).toEqual({ file: f.name, text: null });
    }
  });
});

// ----------------------------------------------------------------------------- app settings

/** How each setting the service reads gets its value in Azure. */
const FROM_PARAMETER: Partial<Record<SettingName, string>> = {
  AUTH_TENANT_ID: 'authTenantId',
  AUTH_AUTHORITY_HOST: 'authAuthorityHost',
  AUTH_AUDIENCE: 'authAudiences',
  AUTH_ALLOWED_ISSUERS: 'authAllowedIssuers',
  AUTH_REQUIRED_ROLE: 'authRequiredRole',
  AUTH_PARTNER_CLAIM: 'authPartnerClaim',
  AUTH_CLOCK_TOLERANCE_SECONDS: 'authClockToleranceSeconds',
  AUTH_ALGORITHMS: 'authAlgorithms',
  PARTNERS_TABLE: 'partnersTableName',
  LOANS_TABLE: 'loansTableName',
  DRAWS_TABLE: 'drawsTableName',
  IDEMPOTENCY_TABLE: 'idempotencyTableName',
  STOPPED_CLIENTS_TABLE: 'stoppedClientsTableName',
  DRAW_DAY_TIMEZONE: 'drawDayTimeZone',
  MAX_BATCH_SIZE: 'maxBatchSize',
  TELEMETRY_SAMPLING_PERCENTAGE: 'telemetrySamplingPercentage',
};
const FROM_RESOURCES: Partial<Record<SettingName, string>> = {
  TABLES_ENDPOINT: "the storage account's table endpoint (storage module output)",
  APPLICATIONINSIGHTS_CONNECTION_STRING: 'the Application Insights component (monitoring module output)',
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "Authorization=AAD with the app's user-assigned identity (identity module output)",
};
/** Settings the service reads that are deliberately not set in Azure, each with the reason. */
const NOT_SET_IN_AZURE: Partial<Record<SettingName, string>> = {
  TABLES_CONNECTION_STRING:
    'the app reaches the tables with its managed identity through TABLES_ENDPOINT; the account allows no shared key, and setting both fails start-up',
  AUTH_OPENID_CONFIG_URL: "derived by the service from AUTH_AUTHORITY_HOST and AUTH_TENANT_ID (the tenant's v2.0 metadata)",
};
/** Settings Flex Consumption rejects or ignores (its functionAppConfig holds runtime, scale and package). */
const FLEX_DEPRECATED = [
  'FUNCTIONS_WORKER_RUNTIME',
  'FUNCTIONS_EXTENSION_VERSION',
  'WEBSITE_RUN_FROM_PACKAGE',
  'WEBSITE_CONTENTSHARE',
  'WEBSITE_CONTENTAZUREFILECONNECTIONSTRING',
  'WEBSITE_NODE_DEFAULT_VERSION',
  'SCM_DO_BUILD_DURING_DEPLOYMENT',
  'ENABLE_ORYX_BUILD',
  'WEBSITE_TIME_ZONE',
  'TZ',
  'AzureWebJobsStorage',
];

function appSettings(): ObjectValue {
  const config = moduleFile('functionApp').resources.filter((r) => r.type === 'Microsoft.Web/sites/config' && r.body.name === 'appsettings');
  expect(config).toHaveLength(1);
  return config[0].body.properties as ObjectValue;
}

/** The source text an expression stands for, with the variables it names expanded. */
function expanded(bicep: BicepFile, text: string, depth = 3): string {
  if (depth === 0) return text;
  const vars = (text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []).filter((id) => bicep.vars.has(id));
  return [text, ...vars.map((id) => expanded(bicep, (bicep.vars.get(id) as SyntaxNode).text, depth - 1))].join(' ');
}

describe('app settings cover every setting the service reads (lib/config SETTING_NAMES)', () => {
  test('each setting is set from a parameter, set from a resource, or deliberately not set', () => {
    const classified = SETTING_NAMES.map((name) => [name, [FROM_PARAMETER, FROM_RESOURCES, NOT_SET_IN_AZURE].filter((group) => name in group).length]);
    expect(classified.filter(([, count]) => count !== 1)).toEqual([]);
    const known: string[] = [...SETTING_NAMES];
    expect([...Object.keys(FROM_PARAMETER), ...Object.keys(FROM_RESOURCES), ...Object.keys(NOT_SET_IN_AZURE)].filter((n) => !known.includes(n))).toEqual([]);
  });

  test('Bicep sets every setting production needs', () => {
    const set = Object.keys(appSettings());
    const needed = SETTING_NAMES.filter((name) => !(name in NOT_SET_IN_AZURE));
    expect(needed.filter((name) => !set.includes(name))).toEqual([]);
  });

  test('Bicep does not set the settings that are deliberately left out', () => {
    const set = Object.keys(appSettings());
    expect(Object.keys(NOT_SET_IN_AZURE).filter((name) => set.includes(name))).toEqual([]);
  });

  test('each parameter-driven setting is wired from its main.bicep parameter', () => {
    const settings = appSettings();
    const moduleParams = mainModule('functionApp').params;
    const problems = Object.entries(FROM_PARAMETER).flatMap(([setting, mainParam]) => {
      if (!mainFile().params.has(mainParam)) return [`${setting}: main.bicep declares no ${mainParam}`];
      // setting value → functionApp module parameter → main.bicep expression naming the parameter
      const moduleParam = exprText(settings[setting]).match(/[A-Za-z_][A-Za-z0-9_]*(?=\)?$)/)?.[0] ?? '';
      const given = moduleParams[moduleParam];
      const source = expanded(mainFile(), exprText(given));
      return new RegExp(`\\b${mainParam}\\b`).test(source) ? [] : [`${setting}: ${moduleParam} = ${exprText(given)} does not come from ${mainParam}`];
    });
    expect(problems).toEqual([]);
  });

  test('local.settings.example.json lists every setting the service reads', () => {
    const example = JSON.parse(readFileSync(join(ROOT, 'local.settings.example.json'), 'utf8')) as { Values: Record<string, string> };
    expect(SETTING_NAMES.filter((name) => !(name in example.Values))).toEqual([]);
  });

  test('the host and the SDKs use the managed identity: storage, tables, telemetry', () => {
    const settings = appSettings();
    expect(settings.AzureWebJobsStorage__credential).toBe('managedidentity');
    expect(exprText(settings.AzureWebJobsStorage__accountName)).toBe('storageAccountName');
    expect(exprText(settings.AzureWebJobsStorage__clientId)).toBe('identityClientId');
    expect(exprText(settings.AZURE_CLIENT_ID)).toBe('identityClientId');
    expect(exprText(settings.APPLICATIONINSIGHTS_AUTHENTICATION_STRING)).toBe("'ClientId=${identityClientId};Authorization=AAD'");
    expect(exprText(mainModule('functionApp').params.identityClientId)).toBe('identity.outputs.clientId');
  });

  test("the host refuses bodies a little above the service's own limit, before buffering them", () => {
    const limit = Number(moduleFile('functionApp').vars.get('requestBodySizeLimitBytes')?.text);
    expect(exprText(appSettings().FUNCTIONS_REQUEST_BODY_SIZE_LIMIT)).toBe('string(requestBodySizeLimitBytes)');
    expect(limit).toBeGreaterThan(LIMITS.bodyBytes); // up to it, the service answers its own documented 400
    expect(limit).toBeLessThanOrEqual(LIMITS.bodyBytes + 16 * 1024); // and not the host's 100 MB default
  });

  test('the language worker runs with source maps on: logged stacks name the TypeScript sources the package maps', () => {
    // The host reads languageWorkers:node:arguments and puts it on the node command line before the worker script.
    expect(appSettings().languageWorkers__node__arguments).toBe('--enable-source-maps');
  });

  test('no setting Flex Consumption rejects', () => {
    expect(Object.keys(appSettings()).filter((name) => FLEX_DEPRECATED.includes(name))).toEqual([]);
  });

  test('the table parameters default to the tables the code defaults to (docs/contract.md §4)', () => {
    const defaults = loadConfig({
      AUTH_TENANT_ID: '72f988bf-86f1-41af-91ab-2d7cd011db47',
      AUTH_AUDIENCE: 'x',
      TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    }).tables;
    const param = (name: string): Value | undefined => mainFile().params.get(name)?.defaultValue;
    expect([
      param('partnersTableName'),
      param('loansTableName'),
      param('drawsTableName'),
      param('idempotencyTableName'),
      param('stoppedClientsTableName'),
    ]).toEqual([defaults.partnersTable, defaults.loansTable, defaults.drawsTable, defaults.idempotencyTable, defaults.stoppedClientsTable]);
  });

  test('the storage module creates the same five tables the settings and role assignments name', () => {
    const names = ['partnersTableName', 'loansTableName', 'drawsTableName', 'idempotencyTableName', 'stoppedClientsTableName'];
    expect(literalVar(mainFile(), 'tableNames')).toEqual(names.map((name) => new Expr(name)));
    expect(mainModule('storage').params.tableNames).toEqual(new Expr('tableNames'));
    for (const name of names) {
      expect(mainModule('roleAssignments').params[name]).toEqual(new Expr(name));
      expect(mainModule('functionApp').params[name]).toEqual(new Expr(name));
    }
  });

  /** The settings an environment file yields, as the service would read them (resource outputs faked). */
  function settingsFor(env: string, overrides: Record<string, unknown> = {}): Settings {
    const value = (name: string): unknown => {
      if (name in overrides) return overrides[name];
      const given = parameterFile(env).parameters[name];
      if (given !== undefined) return given.value;
      const fallback = mainFile().params.get(name)?.defaultValue;
      if (name === 'authTenantId' && fallback instanceof Expr) return '72f988bf-86f1-41af-91ab-2d7cd011db47'; // tenant().tenantId
      if (name === 'authAuthorityHost' && fallback instanceof Expr) return 'https://login.microsoftonline.com/'; // environment().authentication.loginEndpoint
      return fallback;
    };
    const settings: Settings = {
      TABLES_ENDPOINT: 'https://stdrawreqprodabc123.table.core.windows.net',
      APPLICATIONINSIGHTS_CONNECTION_STRING:
        'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://eastus-8.in.applicationinsights.azure.com/',
    };
    for (const [setting, param] of Object.entries(FROM_PARAMETER)) {
      const v = value(param);
      settings[setting] = Array.isArray(v) ? v.join(',') : String(v);
    }
    // The API application's id (entraApi.outputs.appId) comes first; the parameter only adds to it.
    settings.AUTH_AUDIENCE = [API_APP_ID, ...(value('authAudiences') as string[])].join(',');
    return settings;
  }

  test.each(ENVIRONMENTS)("the settings %s yields pass the service's own start-up validation", (env) => {
    const config = loadConfig(settingsFor(env));
    expect(config.auth.audiences).toEqual([API_APP_ID]);
    expect(config.maxBatchSize).toBe(envValue(env, 'maxBatchSize') ?? 100);
    expect(config.drawDayTimeZone).toBe(envValue(env, 'drawDayTimeZone'));
    expect(config.auth.requiredRole).toBe(envValue(env, 'authRequiredRole'));
    expect(config.tables.endpoint).toBeDefined();
    expect(config.tables.connectionString).toBeUndefined();
  });

  test("every whole-number parameter's Bicep range is a range the service accepts", () => {
    const ints = Object.entries(FROM_PARAMETER).filter(([, param]) => mainFile().params.get(param)?.type === 'int');
    expect(ints.length).toBeGreaterThan(0);
    for (const [, param] of ints) {
      const decorators = (mainFile().params.get(param) as Param).decorators;
      expect({ param, bounded: 'minValue' in decorators && 'maxValue' in decorators }).toEqual({ param, bounded: true });
      for (const bound of [decorators.minValue[0], decorators.maxValue[0]]) {
        expect(() => loadConfig(settingsFor('prod', { [param]: bound }))).not.toThrow();
      }
    }
  });
});

const API_APP_ID = '6e7d8c9b-1a2b-4c3d-8e9f-0a1b2c3d4e5f';

function literalVar(bicep: BicepFile, name: string): Value {
  const node = bicep.vars.get(name);
  if (node === undefined) throw new Error(`${bicep.name} declares no var ${name}`);
  return literal(node);
}

/**
 * A role assignment of `f` as `role → scope type scope name` (the role by name from `roles`), and the
 * variable its role definition id comes from.
 */
function roleAssignment(f: BicepFile, r: Resource, roles: Readonly<Record<string, string>>): { text: string; roleVar: string } {
  const scope = f.resources.find((s) => s.symbol === exprText(r.body.scope));
  const roleVar = /roleDefinitions',\s*([A-Za-z_]\w*)\)$/.exec(exprText(at(r.body, 'properties.roleDefinitionId')))?.[1] ?? '';
  const role = f.vars.has(roleVar) ? stringOf(literalVar(f, roleVar)) : roleVar;
  const scopeName = scope === undefined ? 'NO SCOPE (resource group)' : `${scope.type} ${exprText(scope.body.name)}`;
  return { text: `${roles[role] ?? `unexpected role ${role}`} → ${scopeName}`, roleVar };
}

/** Every role assignment of `f`, as `role → scope type scope name`, sorted. */
const roleAssignmentTexts = (f: BicepFile, roles: Readonly<Record<string, string>>): string[] =>
  f.resources
    .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
    .map((r) => roleAssignment(f, r, roles).text)
    .sort();

// ----------------------------------------------------------------------------- resources

/** The identifiers in `node` that refer to `name` (not declarations or property keys). */
function references(node: SyntaxNode, name: string): SyntaxNode[] {
  const found: SyntaxNode[] = [];
  const visit = (n: SyntaxNode): void => {
    const parent = n.parent;
    const isName =
      parent !== null && ['parameter_declaration', 'variable_declaration', 'object_property'].includes(parent.type) && named(parent)[0]?.id === n.id;
    if (n.type === 'identifier' && n.text === name && !isName) found.push(n);
    for (const child of n.namedChildren) visit(child);
  };
  visit(node);
  return found;
}

describe('authentication settings are right in every cloud and for any spelling of the tenant', () => {
  test('the tenant id is lower-cased wherever main.bicep uses it (Entra writes tid and issuers in lower case)', () => {
    const uses = references(mainFile().root, 'authTenantId');
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) {
      const call = use.parent?.parent;
      expect({
        use: `${use.startPosition.row + 1}: ${call?.text ?? use.text}`,
        lowered: call?.type === 'call_expression' && call.childForFieldName('function')?.text === 'toLower' && named(use.parent!).length === 1,
      }).toEqual({
        use: expect.any(String),
        lowered: true,
      });
    }
    // …and reaches the service unchanged: AUTH_TENANT_ID is the module parameter main.bicep lowered.
    expect(exprText(mainModule('functionApp').params.authTenantId)).toBe('toLower(authTenantId)');
    expect(exprText(appSettings().AUTH_TENANT_ID)).toBe('authTenantId');
  });

  test('no issuer is pinned: AUTH_ALLOWED_ISSUERS is only what the parameter lists, empty by default and in every environment', () => {
    expect(exprText(mainModule('functionApp').params.authAllowedIssuers)).toBe("join(authAllowedIssuers, ',')");
    expect(mainFile().params.get('authAllowedIssuers')?.defaultValue).toEqual([]);
    for (const env of ENVIRONMENTS) expect(Object.keys(parameterFile(env).parameters)).not.toContain('authAllowedIssuers');
  });

  test('no template names a login or token-issuer host: the cloud comes from environment()', () => {
    const hosts = /login\.microsoftonline|sts\.windows\.net|chinacloudapi|microsoftonline\.(us|cn)|\/v2\.0/;
    for (const path of FILE_PATHS)
      expect({ path: relative(ROOT, path), pinned: hosts.exec(readFileSync(path, 'utf8'))?.[0] }).toEqual({ path: relative(ROOT, path), pinned: undefined });
    expect(exprText(mainFile().params.get('authAuthorityHost')?.defaultValue)).toBe('environment().authentication.loginEndpoint');
  });
});

describe('security and hosting properties', () => {
  test('storage: no shared key, TLS 1.2, HTTPS only, no public blob access, private deployment container', () => {
    const storage = moduleFile('storage');
    const account = resourceOf(storage, 'Microsoft.Storage/storageAccounts').body;
    expect(at(account, 'properties.allowSharedKeyAccess')).toBe(false);
    expect(at(account, 'properties.allowBlobPublicAccess')).toBe(false);
    expect(at(account, 'properties.minimumTlsVersion')).toBe('TLS1_2');
    expect(at(account, 'properties.supportsHttpsTrafficOnly')).toBe(true);
    expect(at(account, 'properties.defaultToOAuthAuthentication')).toBe(true);
    expect(at(resourceOf(storage, 'Microsoft.Storage/storageAccounts/blobServices/containers').body, 'properties.publicAccess')).toBe('None');
    expect(storage.root.text).toMatch(/resource tables 'Microsoft\.Storage\/storageAccounts\/tableServices\/tables@[\d-]+' = \[for tableName in tableNames:/);
  });

  test('Application Insights: workspace-based, local authentication off', () => {
    const component = resourceOf(moduleFile('monitoring'), 'Microsoft.Insights/components').body;
    expect(at(component, 'properties.DisableLocalAuth')).toBe(true);
    expect(exprText(at(component, 'properties.WorkspaceResourceId'))).toBe('workspace.id');
  });

  test('Flex Consumption plan and a Linux function app on the Node version, memory and scale of parameters (Node 22 unless set)', () => {
    const app = moduleFile('functionApp');
    const plan = resourceOf(app, 'Microsoft.Web/serverfarms').body;
    expect(plan.sku).toEqual({ name: 'FC1', tier: 'FlexConsumption' });
    expect(at(plan, 'properties.reserved')).toBe(true);
    const site = resourceOf(app, 'Microsoft.Web/sites').body;
    expect(site.kind).toBe('functionapp,linux');
    expect(at(site, 'properties.functionAppConfig.runtime')).toEqual({ name: 'node', version: new Expr('nodeVersion') });
    expect(at(site, 'properties.functionAppConfig.scaleAndConcurrency')).toEqual({
      alwaysReady: new Expr('alwaysReadyGroups'),
      instanceMemoryMB: new Expr('instanceMemoryMB'),
      maximumInstanceCount: new Expr('maximumInstanceCount'),
      triggers: { http: { perInstanceConcurrency: new Expr('perInstanceConcurrency') } },
    });
    for (const name of ['nodeVersion', 'instanceMemoryMB', 'maximumInstanceCount', 'perInstanceConcurrency', 'alwaysReady'])
      expect(mainModule('functionApp').params[name]).toEqual(new Expr(name));
    // One parameter moves an environment to Node 24; until its parameters file sets it, production's Node 22.
    expect(mainFile().params.get('nodeVersion')).toMatchObject({ defaultValue: '22', decorators: { allowed: [['22', '24']] } });
    for (const env of ENVIRONMENTS) expect(parameterFile(env).parameters.nodeVersion).toBeUndefined();
  });

  test('the app: HTTPS only, FTPS off, TLS 1.2, user-assigned identity for the deployment container', () => {
    const site = resourceOf(moduleFile('functionApp'), 'Microsoft.Web/sites').body;
    expect(at(site, 'properties.httpsOnly')).toBe(true);
    expect(at(site, 'properties.siteConfig.ftpsState')).toBe('Disabled');
    expect(at(site, 'properties.siteConfig.minTlsVersion')).toBe('1.2');
    expect(at(site, 'properties.siteConfig.scmMinTlsVersion')).toBe('1.2');
    expect(at(site, 'identity.type')).toBe('UserAssigned');
    expect(at(site, 'properties.functionAppConfig.deployment.storage')).toEqual({
      type: 'blobContainer',
      value: new Expr('deploymentContainerUrl'),
      authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: new Expr('identityId') },
    });
  });
});

// ----------------------------------------------------------------------------- role assignments

describe('role assignments: data roles at the narrowest scope', () => {
  const ROLES = {
    ...rolesNamed('Storage Blob Data Owner', 'Storage Table Data Reader', 'Monitoring Metrics Publisher'),
    recordsRoleId: "the bootstrap's records role",
    keysRoleId: "the bootstrap's key records role",
  };

  /** The app's roles: every assignment but the deployer's one on Partners (partnersWriter.bicep, tested below). */
  function assignments(): string[] {
    return [...files.values()]
      .filter((f) => f.name === relative(ROOT, join(INFRA, 'modules', 'roleAssignments.bicep')))
      .flatMap((f) =>
        f.resources
          .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
          .map((r) => {
            expect({ symbol: r.symbol, principalType: at(r.body, 'properties.principalType') }).toEqual({
              symbol: r.symbol,
              principalType: 'ServicePrincipal',
            });
            return roleAssignment(f, r, ROLES).text;
          }),
      )
      .sort();
  }

  test('exactly these roles at exactly these scopes', () => {
    expect(assignments()).toEqual([
      'Monitoring Metrics Publisher → Microsoft.Insights/components appInsightsName',
      'Storage Blob Data Owner → Microsoft.Storage/storageAccounts storageAccountName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables loansTableName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables partnersTableName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables stoppedClientsTableName',
      "the bootstrap's key records role → Microsoft.Storage/storageAccounts/tableServices/tables idempotencyTableName",
      "the bootstrap's records role → Microsoft.Storage/storageAccounts/tableServices/tables drawsTableName",
    ]);
  });

  test("they are granted to the app's managed identity; the records role is the bootstrap's (the same expression)", () => {
    expect(exprText(mainModule('roleAssignments').params.recordsRoleId)).toBe("guid(subscription().id, appName, 'records')");
    const recordsRole = file(BOOTSTRAP).resources.find((r) => r.symbol === 'recordsRole') as Resource;
    expect(exprText(recordsRole.body.name)).toBe("guid(subscription().id, appName, 'records')");
    const keysRole = file(BOOTSTRAP).resources.find((r) => r.symbol === 'keysRole') as Resource;
    expect(exprText(keysRole.body.name)).toBe(exprText(mainModule('roleAssignments').params.keysRoleId));
    expect(exprText(keysRole.body.name)).toBe("guid(subscription().id, appName, 'key-records')");
    expect(exprText(mainModule('roleAssignments').params.principalId)).toBe('identity.outputs.principalId');
    expect(exprText(mainModule('roleAssignments').params.storageAccountName)).toBe('storage.outputs.name');
    expect(exprText(mainModule('roleAssignments').params.appInsightsName)).toBe('monitoring.outputs.appInsightsName');
  });
});

// ----------------------------------------------------------------------------- alerts

describe('alerts that page on-call', () => {
  /** The outcomes the alerts page on, typed so that a renamed outcome fails to compile. */
  const PAGED: Record<'500' | '502' | '401', Outcome> = { 500: 'Failed', 502: 'DependencyFailed', 401: 'Unauthorized' };
  const alerts = (): BicepFile => moduleFile('alerts');

  test("queries read the service's own event (lib/telemetry EVENT_NAME)", () => {
    expect(literalVar(mainFile(), 'eventName')).toBe(EVENT_NAME);
    expect(mainModule('alerts').params.eventName).toEqual(new Expr('eventName'));
    expect(exprText(literalVar(alerts(), 'invocations'))).toContain('customEvents | where name == "${eventName}"');
  });

  test('the 500 rate and the 502 rate are separate rules', () => {
    const rates = literalVar(alerts(), 'rateAlerts') as ObjectValue[];
    expect(rates.map((r) => r.outcome).sort()).toEqual([PAGED[500], PAGED[502]].sort());
    expect(new Set(rates.map((r) => r.name)).size).toBe(2);
    const rule = (alerts().resources.find((r) => r.symbol === 'rateRules') as Resource).body;
    const [criterion] = at(rule, 'properties.criteria.allOf') as ObjectValue[];
    expect(exprText(criterion.query)).toContain('countif(${alert.matching})');
    for (const r of rates) expect(r.matching).toMatch(new RegExp(`^outcome == "${r.outcome as string}"( and |$)`));
    // The 502 of a key in its grace answers a partner's late retry, not a failed dependency: it does not page.
    expect(rates.find((r) => r.outcome === PAGED[502])?.matching).toBe(`outcome == "${PAGED[502]}" and reason != "${KEY_OUTCOME_PENDING}"`);
    expect(criterion.threshold).toEqual(new Expr('alert.threshold'));
    expect(at(rule, 'properties.severity')).toEqual(new Expr('alert.severity'));
  });

  test('a spike of 401s for presented tokens', () => {
    const rule = (alerts().resources.find((r) => r.symbol === 'unauthorizedSpike') as Resource).body;
    // Calls without any token (the availability probe, scanners) are not a spike of refused tokens.
    expect(exprText(literalVar(alerts(), 'invocations'))).toContain('where not(outcome == "Unauthorized" and reason == "ERR_AUTH_MISSING")');
    const criteria = at(rule, 'properties.criteria.allOf') as ObjectValue[];
    expect(exprText(criteria[0].query)).toContain(`outcome == "${PAGED[401]}"`);
    expect(criteria[0].threshold).toEqual(new Expr('unauthorizedSpikeCount'));
  });

  test('any commit whose outcome is unknown pages, on its own telemetry reason', () => {
    const rule = (alerts().resources.find((r) => r.symbol === 'outcomeUnknown') as Resource).body;
    const [criterion] = at(rule, 'properties.criteria.allOf') as ObjectValue[];
    expect(exprText(criterion.query)).toContain(`where reason == "${COMMIT_OUTCOME_UNKNOWN}"`);
    expect(criterion.operator).toBe('GreaterThan');
    expect(criterion.threshold).toBe(0);
    expect(criterion.timeAggregation).toBe('Total');
    const workbook = readFileSync(join(INFRA, 'workbook.json'), 'utf8');
    expect(workbook).toContain(`reason == \\"${COMMIT_OUTCOME_UNKNOWN}\\"`);
    expect(readFileSync(join(ROOT, 'docs', 'runbook.md'), 'utf8')).toContain('\n### commit-outcome-unknown\n');
  });

  test('availability: a standard web test POSTs to /DrawRequest without a token and expects 401, with a metric alert on it', () => {
    const probe = resourceOf(alerts(), 'Microsoft.Insights/webtests').body;
    expect(at(probe, 'properties.Kind')).toBe('standard');
    expect(at(probe, 'properties.Request.HttpVerb')).toBe('POST');
    expect(at(probe, 'properties.ValidationRules.ExpectedHttpStatusCode')).toBe(401);
    const headers = (at(probe, 'properties.Request.Headers') as ObjectValue[]).map((h) => stringOf(h.key).toLowerCase());
    expect(headers).not.toContain('authorization');
    expect(exprText(mainModule('alerts').params.probeUrl)).toMatch(/\/DrawRequest'$/);
    const host = JSON.parse(readFileSync(join(ROOT, 'host.json'), 'utf8')) as { extensions: { http: { routePrefix: string } } };
    expect(host.extensions.http.routePrefix).toBe('');
    const alert = resourceOf(alerts(), 'Microsoft.Insights/metricAlerts').body;
    expect((at(alert, 'properties.criteria') as ObjectValue)['odata.type']).toBe('Microsoft.Azure.Monitor.WebtestLocationAvailabilityCriteria');
  });

  test('every rule and the web test follow alertsEnabled and notify the on-call action group parameter', () => {
    expect(mainModule('alerts').params.enabled).toEqual(new Expr('alertsEnabled'));
    expect(mainModule('alerts').params.actionGroupId).toEqual(new Expr('onCallActionGroupId'));
    for (const r of alerts().resources) {
      const enabled = r.type === 'Microsoft.Insights/webtests' ? at(r.body, 'properties.Enabled') : at(r.body, 'properties.enabled');
      expect({ rule: r.symbol, enabled }).toEqual({ rule: r.symbol, enabled: new Expr('enabled') });
      if (r.type !== 'Microsoft.Insights/webtests')
        expect({ rule: r.symbol, actions: exprText(at(r.body, 'properties.actions')) }).toEqual({
          rule: r.symbol,
          actions: expect.stringContaining('actionGroups'),
        });
    }
  });
});

describe('the on-call workbook', () => {
  const workbookFile = (): BicepFile => moduleFile('workbook');
  interface WorkbookJson {
    version: string;
    items: { type: number; name: string; content: Record<string, unknown>; conditionalVisibility?: Record<string, unknown> }[];
    fallbackResourceIds: string[];
  }
  const json = (): WorkbookJson => JSON.parse(readFileSync(join(INFRA, 'workbook.json'), 'utf8')) as WorkbookJson;

  test('a shared Microsoft.Insights/workbooks resource, its content loaded from infra/workbook.json with the component in place of the placeholder', () => {
    const { body } = resourceOf(workbookFile(), 'Microsoft.Insights/workbooks');
    expect(body.kind).toBe('shared');
    expect(at(body, 'properties.category')).toBe('workbook');
    expect(at(body, 'properties.version')).toBe('Notebook/1.0');
    expect(at(body, 'properties.serializedData')).toEqual(new Expr('content'));
    expect(exprText(literalVar(workbookFile(), 'content'))).toBe(
      "replace(replace(loadTextContent('../workbook.json'), '__APPLICATION_INSIGHTS_ID__', appInsightsId), '__STORAGE_ACCOUNT_NAME__', storageAccountName)",
    );
    expect(readFileSync(join(INFRA, 'workbook.json'), 'utf8')).toContain('__APPLICATION_INSIGHTS_ID__');
    // On-call reads no resource group: the workbook names the account the runbook's table reads go to.
    expect(mainModule('workbook').params.storageAccountName).toEqual(new Expr('storage.outputs.name'));
    expect(json().items[0].content.json).toContain('--account-name __STORAGE_ACCOUNT_NAME__');
  });

  test("bound to the environment's Application Insights: its source and every query's resource", () => {
    const { body } = resourceOf(workbookFile(), 'Microsoft.Insights/workbooks');
    expect(at(body, 'properties.sourceId')).toEqual(new Expr('toLower(appInsightsId)'));
    expect(mainModule('workbook').params.appInsightsId).toEqual(new Expr('monitoring.outputs.appInsightsId'));
    const { items, fallbackResourceIds } = json();
    expect(fallbackResourceIds).toEqual(['__APPLICATION_INSIGHTS_ID__']);
    for (const item of items.filter((i) => i.type === 3))
      expect({ tile: item.name, resources: item.content.crossComponentResources }).toEqual({ tile: item.name, resources: ['__APPLICATION_INSIGHTS_ID__'] });
  });

  test('one per environment: a GUID name derived from the component, the environment in its display name, and the tags of every resource', () => {
    const { body } = resourceOf(workbookFile(), 'Microsoft.Insights/workbooks');
    expect(exprText(body.name)).toBe("guid(toLower(appInsightsId), 'draw-request-service-on-call-workbook')");
    expect(body.tags).toEqual(new Expr('tags'));
    expect(at(body, 'properties.displayName')).toEqual(new Expr('displayName'));
    expect(mainModule('workbook').params.tags).toEqual(new Expr('allTags'));
    expect(exprText(mainModule('workbook').params.displayName)).toContain('${environmentName}');
    expect(mainFile().outputs.has('workbookUrl')).toBe(true);
  });

  test('every alert links it in its description', () => {
    expect(mainModule('alerts').params.workbookUrl).toEqual(new Expr('workbook.outputs.url'));
    const alerts = moduleFile('alerts');
    const descriptions = [
      ...(literalVar(alerts, 'rateAlerts') as ObjectValue[]).map((a) => a.description),
      ...alerts.resources.filter((r) => r.type !== 'Microsoft.Insights/webtests' && r.symbol !== 'rateRules').map((r) => at(r.body, 'properties.description')),
    ];
    expect(descriptions).toHaveLength(6);
    for (const d of descriptions) expect(exprText(d)).toContain('Workbook: ${workbookUrl}');
  });

  test('parses as a workbook: Notebook/1.0, parameters, and Application Insights log queries', () => {
    const { version, items } = json();
    expect(version).toBe('Notebook/1.0');
    const parameters = items.filter((i) => i.type === 9).flatMap((i) => i.content.parameters as { name: string; type: number }[]);
    expect(parameters.map((p) => [p.name, p.type])).toEqual([
      ['TimeRange', 4],
      ['RequestId', 1],
      ['LoanNumber', 1],
    ]);
    const queries = items.filter((i) => i.type === 3);
    for (const q of queries)
      expect({ tile: q.name, version: q.content.version, queryType: q.content.queryType, resourceType: q.content.resourceType }).toEqual({
        tile: q.name,
        version: 'KqlItem/1.0',
        queryType: 0,
        resourceType: 'microsoft.insights/components',
      });
    expect(new Set(items.map((i) => i.name)).size).toBe(items.length);
  });

  test('it shows what on-call looks at first, and the two lookups only once their parameter is set', () => {
    const titles = json()
      .items.filter((i) => i.type === 3)
      .map((i) => String(i.content.title));
    for (const wanted of [
      /by outcome/,
      /500.*502/,
      /p50, p90 and p99 of total, reads and commit/,
      /401 reasons by client/,
      /error codes by partner/,
      /dependencies by target and result code/,
      /Data-quality/,
      /One invocation/,
      /One loan/,
    ])
      expect(titles).toContainEqual(expect.stringMatching(wanted));
    const byName = new Map(json().items.map((i) => [i.name, i]));
    expect(byName.get('invocation')?.conditionalVisibility).toEqual({ parameterName: 'RequestId', comparison: 'isNotEqualTo', value: '' });
    expect(byName.get('loan')?.conditionalVisibility).toEqual({ parameterName: 'LoanNumber', comparison: 'isNotEqualTo', value: '' });
  });
});

// ----------------------------------------------------------------------------- on-call's access

describe("on-call's access (issue #33): one Entra group per environment, granted what the runbook's steps need", () => {
  const ROLES = rolesNamed('Workbook Reader', 'Monitoring Reader', 'Log Analytics Reader', 'Storage Table Data Reader');
  const access = (): BicepFile => moduleFile('onCallAccess');

  /** Each assignment as `role → scope type scope name`, checked to go to the group as a group. */
  function grants(): string[] {
    const f = access();
    return f.resources
      .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
      .map((r) => {
        const { text, roleVar } = roleAssignment(f, r, ROLES);
        expect({ symbol: r.symbol, principalId: at(r.body, 'properties.principalId'), principalType: at(r.body, 'properties.principalType') }).toEqual({
          symbol: r.symbol,
          principalId: new Expr('groupObjectId'),
          principalType: 'Group',
        });
        // A stable name per group, role and scope: a redeployment finds the same assignment.
        expect(exprText(r.body.name)).toBe(`guid(${exprText(r.body.scope)}.id, groupObjectId, ${roleVar})`);
        return text;
      })
      .sort();
  }

  test('exactly these roles at exactly these scopes: readers only, of the tables the runbook reads (the emergency stop is a workflow, issue #40)', () => {
    expect(grants()).toEqual([
      'Log Analytics Reader → Microsoft.OperationalInsights/workspaces workspaceName',
      'Monitoring Reader → Microsoft.Insights/components appInsightsName',
      'Monitoring Reader → Microsoft.Storage/storageAccounts storageAccountName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables drawsTableName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables partnersTableName',
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables stoppedClientsTableName',
      'Workbook Reader → Microsoft.Insights/workbooks workbookName',
    ]);
  });

  test("granted only when the environment names a group, on that environment's own resources", () => {
    expect(mainFile().root.text).toContain("module onCallAccess 'modules/onCallAccess.bicep' = if (!empty(onCallGroupObjectId)) {");
    expect(mainFile().params.get('onCallGroupObjectId')).toMatchObject({ type: 'string', hasDefault: true, defaultValue: '' });
    expect(Object.fromEntries(Object.entries(mainModule('onCallAccess').params).map(([k, v]) => [k, exprText(v)]))).toEqual({
      groupObjectId: 'onCallGroupObjectId',
      storageAccountName: 'storage.outputs.name',
      partnersTableName: 'partnersTableName',
      drawsTableName: 'drawsTableName',
      stoppedClientsTableName: 'stoppedClientsTableName',
      workspaceName: 'monitoring.outputs.workspaceName',
      appInsightsName: 'monitoring.outputs.appInsightsName',
      workbookName: 'workbook.outputs.name',
    });
    // An object id is a GUID: a name or a mistyped id fails the deployment instead of granting nothing.
    expect(access().params.get('groupObjectId')?.decorators).toMatchObject({ minLength: [36], maxLength: [36] });
  });

  test("dev grants no one; prod's group is a placeholder the deployment refuses until it is filled in (as onCallActionGroupId)", () => {
    expect(envValue('dev', 'onCallGroupObjectId')).toBe('');
    for (const name of ['onCallGroupObjectId', 'onCallActionGroupId', 'platformActionGroupId', 'escalationContact'])
      expect({ name, value: envValue('prod', name) }).toEqual({ name, value: expect.stringContaining('REPLACE-WITH-') });
    const deploy = readFileSync(join(ROOT, 'scripts', 'deploy.sh'), 'utf8');
    expect(deploy).toContain(`if grep -q 'REPLACE-WITH' "$params"; then`);
    expect(deploy).toContain('fill them in (docs/deploy.md)');
  });

  test('the deploying identity may assign these roles: its condition lists each', () => {
    const assignable = literalVar(moduleFile('pipelineIdentities'), 'builtInAssignableRoles') as string[];
    for (const id of Object.keys(ROLES)) expect({ role: ROLES[id], assignable: assignable.includes(id) }).toEqual({ role: ROLES[id], assignable: true });
  });

  test('every alert names whom to escalate to in its environment', () => {
    expect(mainModule('alerts').params.escalationContact).toEqual(new Expr('escalationContact'));
    expect(exprText(literalVar(moduleFile('alerts'), 'escalateTo'))).toBe(
      "empty(escalationContact) ? 'see docs/runbook.md, Paged? Start here' : escalationContact",
    );
    const descriptions = moduleFile('alerts').root.text.match(/^\s+description: '.*'$/gm) ?? [];
    expect(descriptions).toHaveLength(6);
    for (const d of descriptions) expect(d).toContain('Escalate to: ${escalateTo}');
  });
});

// ----------------------------------------------------------------------------- the telemetry budget

describe('the ingestion budget warning (issue #32): a log alert on the workspace, to the platform team', () => {
  const rule = () => resourceOf(moduleFile('ingestionBudget'), 'Microsoft.Insights/scheduledQueryRules').body;

  test("a LogAlert rule scoped to the Log Analytics workspace, over the last day's billable Usage, evaluated hourly, severity 3", () => {
    expect(rule().kind).toBe('LogAlert');
    expect(at(rule(), 'properties.scopes')).toEqual([new Expr('workspaceId')]);
    expect(mainModule('ingestionBudget').params.workspaceId).toEqual(new Expr('monitoring.outputs.workspaceId'));
    expect([at(rule(), 'properties.severity'), at(rule(), 'properties.evaluationFrequency'), at(rule(), 'properties.windowSize')]).toEqual([3, 'PT1H', 'P1D']);
    const [criterion] = at(rule(), 'properties.criteria.allOf') as ObjectValue[];
    expect(exprText(criterion.query)).toBe(
      "'Usage | where IsBillable | summarize billableGb = sum(Quantity) / 1000.0 | extend budgetPercent = 100.0 * billableGb / ${dailyBudgetGb}'",
    );
    expect([criterion.metricMeasureColumn, criterion.timeAggregation, criterion.operator, criterion.threshold]).toEqual([
      'budgetPercent',
      'Maximum',
      'GreaterThan',
      new Expr('warningPercent'),
    ]);
  });

  test("it notifies the platform team's action group, not on-call's, and follows alertsEnabled", () => {
    const params = mainModule('ingestionBudget').params;
    expect([params.actionGroupId, params.enabled, params.dailyBudgetGb, params.warningPercent]).toEqual([
      new Expr('platformActionGroupId'),
      new Expr('alertsEnabled'),
      new Expr('telemetryDailyBudgetGb'),
      new Expr('telemetryBudgetWarningPercent'),
    ]);
    expect(exprText(at(rule(), 'properties.actions.actionGroups'))).toBe('empty(actionGroupId) ? [] : [\n        actionGroupId\n      ]');
    expect(mainFile().params.get('platformActionGroupId')).toMatchObject({ type: 'string', defaultValue: '' });
  });

  test('no daily cap in prod (it would drop the events the alerts read); where a cap is set (dev), the warning comes before it', () => {
    expect(envValue('prod', 'logDailyQuotaGb')).toBe(-1);
    for (const env of ENVIRONMENTS) {
      const budget = envValue(env, 'telemetryDailyBudgetGb') as number;
      const percent = (envValue(env, 'telemetryBudgetWarningPercent') as number | undefined) ?? 80;
      const cap = envValue(env, 'logDailyQuotaGb') as number;
      expect({ env, budget: Number.isInteger(budget) && budget >= 1 }).toEqual({ env, budget: true });
      if (cap > 0) expect({ env, warnsAtGb: (budget * percent) / 100 < cap }).toEqual({ env, warnsAtGb: true });
    }
    expect(mainFile().params.get('telemetryBudgetWarningPercent')?.defaultValue).toBe(80);
  });
});

// ----------------------------------------------------------------------------- docs/deploy.md against the templates

describe('docs/deploy.md names only outputs and fields that exist', () => {
  const deployMd = () => readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');

  test("the bootstrap's outputs it copies are the bootstrap's, into the fields scripts/target.sh reads", () => {
    const lines = deployMd().split('\n');
    const header = lines.findIndex((l) => /^\| Bootstrap output \| `infra\/env\/<env>\.pipeline\.json` field \|$/.test(l));
    expect(header).toBeGreaterThan(0);
    const rows = lines.slice(header + 2).filter((_, i, all) => all.slice(0, i + 1).every((l) => l.startsWith('|')));
    const pairs = rows.map((r) =>
      r
        .split('|')
        .slice(1, 3)
        .map((c) => /`(\w+)`/.exec(c)?.[1] ?? c.trim()),
    );
    const outputs = file(BOOTSTRAP).outputs;
    expect(pairs.filter(([output]) => !outputs.has(output)).map(([output]) => output)).toEqual([]);
    const targetSh = readFileSync(join(ROOT, 'scripts', 'target.sh'), 'utf8');
    const targetFields = /const names = \[([^\]]*)\]/.exec(targetSh)?.[1].match(/\w+/g) ?? [];
    expect(pairs.map(([, field]) => field).sort()).toEqual([...targetFields].sort());
    expect(pairs).toContainEqual(['resourceGroupName', 'resourceGroup']);
    // Besides the bootstrap's outputs: githubRepository (scripts/provenance.cjs) and privateRunnerGroup, which
    // scripts/target.sh reads on its own (the deploy job's runner), and docs/deploy.md names below the table.
    expect(targetSh).toContain('target.privateRunnerGroup');
    expect(deployMd()).toMatch(/The file's\s+`privateRunnerGroup` is not the bootstrap's/);
    expect(deployMd()).toMatch(/`requiredReviewers` \(`true` for\s+prod\) is not the bootstrap's either/);
    for (const env of ENVIRONMENTS) {
      const pipeline = JSON.parse(readFileSync(join(INFRA, 'env', `${env}.pipeline.json`), 'utf8')) as Record<string, unknown>;
      expect(
        Object.keys(pipeline)
          .filter((k) => k !== '$comment')
          .sort(),
      ).toEqual([...targetFields, 'githubRepository', 'privateRunnerGroup', 'requiredReviewers'].sort());
      // requiredReviewers: scripts/githubSettings.cjs's, applied and checked (prod true).
      expect(pipeline.requiredReviewers).toBe(env === 'prod');
    }
  });

  test('the sections the scripts and workflows send a person to are its headings, and the refusals it quotes are theirs', () => {
    const text = deployMd();
    const headings = [...text.matchAll(/^#{2,3} (?:\d+(?:\.\d+)*\.? )?(.+)$/gm)].map((m) => m[1]);
    const files = [
      'scripts/deploy.sh',
      'scripts/target.sh',
      'scripts/smokeCheck.cjs',
      'scripts/githubSettings.cjs',
      'scripts/stopClient.cjs',
      'infra/modules/pipelineIdentities.bicep',
      '.github/workflows/deploy.yml',
      '.github/workflows/deploy-environment.yml',
      '.github/workflows/stop-client.yml',
    ];
    const source = (f: string) => readFileSync(join(ROOT, f), 'utf8');
    const named = files.flatMap((f) => [...source(f).matchAll(/docs\/deploy\.md, \\?"([^"\\]+)\\?"/g)].map((m) => `${f}: ${m[1]}`));
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((n) => !headings.some((h) => h.startsWith(n.split(': ')[1])))).toEqual([]);
    // "Network isolation" and "Moving an environment to isolation" quote these refusals (wrapped lines read as spaces).
    const prose = text.replace(/\s*\n\s*/g, ' ');
    const quotes: [string, string][] = [
      ['scripts/target.sh', "the environment's storage is closed (networkIsolated, storagePublicAccess false): set privateRunnerGroup"],
      ['scripts/deploy.sh', 'refused, nothing deployed: '],
      ['scripts/deploy.sh', 'closes storage (storagePublicAccess false), but the last successful deployment of'],
      ['scripts/deploy.sh', 'did not isolate it'],
    ];
    for (const [f, quote] of quotes)
      expect({ quote, inScript: source(f).includes(quote), inDoc: prose.includes(quote) }).toEqual({ quote, inScript: true, inDoc: true });
  });

  test("every deployment output and parameter it names in code is main.bicep's", () => {
    const text = deployMd();
    const outputs = [...text.matchAll(/deployment's (?:output|`partnerRows` output) `?(\w+)`?|output `(\w+)`/g)].map((m) => m[1] ?? m[2]);
    expect(outputs.filter((o) => !mainFile().outputs.has(o))).toEqual([]);
    const parameterRows = text
      .slice(/^## (?:\d+\. )?Parameters$/m.exec(text)?.index ?? -1)
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .flatMap((l) => [...l.split('|')[1].matchAll(/`(\w+)`/g)].map((m) => m[1]));
    expect(parameterRows.length).toBeGreaterThan(40);
    expect(parameterRows.filter((p) => !mainFile().params.has(p))).toEqual([]);
    expect([...mainFile().params.keys()].filter((p) => !parameterRows.includes(p))).toEqual([]);
  });
});

test('the infra parameter and pipeline files exist for every environment and nothing else', () => {
  expect(readdirSync(join(INFRA, 'env')).sort()).toEqual(ENVIRONMENTS.flatMap((e) => [`${e}.parameters.json`, `${e}.pipeline.json`]).sort());
  expect(existsSync(GRAMMAR)).toBe(true);
});

// ----------------------------------------------------------------------------- Microsoft Entra ID as code

describe('Flex Consumption scale: published types and the measured choice per environment', () => {
  // FunctionAppConfig of Microsoft.Web/sites@2024-04-01 as Azure/bicep-types-az publishes it (the fixture names its commit).
  const web = () => JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'azure-web-types', 'functionAppConfig.json'), 'utf8')) as { types: GraphType[] };
  const functionAppConfigProblems = (value: Value) => graphProblems(value, web().types[0], '', false, web().types);

  /** The function app's always-ready groups as ARM would deploy them for `parameters` given to main.bicep (it throws what fail() says). */
  async function alwaysReadyGroups(parameters: Record<string, unknown>): Promise<unknown> {
    const main = await BicepEvaluation.load(MAIN, parameters as Record<string, EvaluatedValue>);
    return (await BicepEvaluation.load(join(INFRA, 'modules', 'functionApp.bicep'), main.moduleParams('functionApp'))).variable('alwaysReadyGroups');
  }
  const parametersOf = (env: string) => Object.fromEntries(Object.entries(parameterFile(env).parameters).map(([name, p]) => [name, p.value]));

  test("the app's functionAppConfig, always-ready list included, sets only published properties of the API version it declares", async () => {
    const site = resourceOf(moduleFile('functionApp'), 'Microsoft.Web/sites');
    expect(site.typeWithVersion).toBe('Microsoft.Web/sites@2024-04-01');
    const config = at(site.body, 'properties.functionAppConfig') as ObjectValue;
    const scale = config.scaleAndConcurrency as ObjectValue;
    const withList = { ...config, scaleAndConcurrency: { ...scale, alwaysReady: (await alwaysReadyGroups(parametersOf('prod'))) as Value } };
    expect(functionAppConfigProblems(withList)).toEqual([]);
  });

  // Microsoft (Flex Consumption plan): "No less than two always-ready instances can be configured per function
  // or function group while zone redundancy is enabled" (docs/decisions/0102-prod-is-zone-redundant-with-two-always-ready-instances.md).
  test('a zone-redundant plan is given at least two always-ready instances: each parameters file as deployed, and fewer refused by name', async () => {
    expect(await alwaysReadyGroups(parametersOf('dev'))).toEqual([]);
    expect(envValue('prod', 'zoneRedundant')).toBe(true);
    expect(await alwaysReadyGroups(parametersOf('prod'))).toEqual([{ name: 'http', instanceCount: envValue('prod', 'alwaysReady') }]);
    for (const env of ENVIRONMENTS) if (envValue(env, 'zoneRedundant') === true) expect(envValue(env, 'alwaysReady')).toBeGreaterThanOrEqual(2);
    for (const count of [0, 1])
      await expect(alwaysReadyGroups({ ...parametersOf('prod'), alwaysReady: count })).rejects.toThrow(
        new RegExp(`^alwaysReady is ${count}, but a zone-redundant Flex Consumption plan needs at least 2 always-ready instances`),
      );
    expect(await alwaysReadyGroups({ ...parametersOf('prod'), alwaysReady: 3 })).toEqual([{ name: 'http', instanceCount: 3 }]);
    // Without zone redundancy any count from 0 is deployed as given.
    expect(await alwaysReadyGroups({ ...parametersOf('prod'), zoneRedundant: false, alwaysReady: 1 })).toEqual([{ name: 'http', instanceCount: 1 }]);
    expect(await alwaysReadyGroups({ ...parametersOf('dev'), alwaysReady: 0 })).toEqual([]);
  });

  test('the type check can fail: an unknown property, and a count written as text', () => {
    expect(
      functionAppConfigProblems({
        scaleAndConcurrency: { alwaysReady: [{ name: 'http', instanceCount: '1' }], triggers: { http: { concurrency: 4 } } },
      }),
    ).toEqual(['scaleAndConcurrency.alwaysReady[0].instanceCount: an integer is expected', 'scaleAndConcurrency.triggers.http.concurrency: no such property']);
  });

  test('each environment chooses its size, concurrency and always-ready instances; the bench measures what prod sets', () => {
    for (const env of ENVIRONMENTS) {
      expect([512, 2048, 4096]).toContain(envValue(env, 'instanceMemoryMB'));
      expect(envValue(env, 'perInstanceConcurrency')).toEqual(expect.any(Number));
      expect(envValue(env, 'alwaysReady')).toEqual(expect.any(Number));
    }
    // docs/decisions/0115-instance-size-concurrency-and-always-ready-chosen-by.md: both on one core, four at once (not the default 16);
    // prod keeps instances warm, two as its zone redundancy needs; dev scales to zero.
    expect(['dev', 'prod'].map((env) => [envValue(env, 'instanceMemoryMB'), envValue(env, 'perInstanceConcurrency')])).toEqual([
      [2048, 4],
      [2048, 4],
    ]);
    expect([envValue('dev', 'alwaysReady'), envValue('prod', 'alwaysReady')]).toEqual([0, 2]);
  });
});

/** The published types of the Microsoft Graph Bicep extension (tests/fixtures/msgraph-bicep-types/README.md). */
const GRAPH_TYPES_DIR = join(ROOT, 'tests', 'fixtures', 'msgraph-bicep-types');
type GraphType = {
  $type: string;
  name?: string;
  body?: { $ref: string };
  properties?: Record<string, { type: { $ref: string }; flags: number }>;
  itemType?: { $ref: string };
  /** StringLiteralType */
  value?: string;
  /** UnionType */
  elements?: Array<{ $ref: string }>;
  /** ObjectType used as a dictionary (userAssignedIdentities) */
  additionalProperties?: { $ref: string };
};
const graphTypes = JSON.parse(readFileSync(join(GRAPH_TYPES_DIR, 'types.json'), 'utf8')) as GraphType[];
const graphIndex = JSON.parse(readFileSync(join(GRAPH_TYPES_DIR, 'index.json'), 'utf8')) as {
  resources: Record<string, { $ref: string }>;
  settings: { version: string };
};
const typeIn = (types: readonly GraphType[], ref: { $ref: string }): GraphType => types[Number(/^(?:types\.json)?#\/(\d+)$/.exec(ref.$ref)?.[1])];
const graphType = (ref: { $ref: string }): GraphType => typeIn(graphTypes, ref);
/** Bicep type flags (Azure/bicep-types): */
const FLAG = { required: 1, readOnly: 2, identifier: 16 } as const;

/** What in `value` the Graph type `type` does not allow: unknown or read-only properties, missing required ones. */
function graphProblems(value: Value, type: GraphType, path: string, existing = false, types: readonly GraphType[] = graphTypes): string[] {
  // `condition ? <literal> : <literal>`: each branch must fit (the storage account's network settings are written so).
  const branches = value instanceof Expr ? /^[^?'"]+\?\s*('[^']*'|true|false|-?\d+)\s*:\s*('[^']*'|true|false|-?\d+)$/.exec(value.text.trim()) : null;
  if (branches !== null) {
    const asLiteral = (text: string): Value =>
      text.startsWith("'") ? text.slice(1, -1) : text === 'true' || text === 'false' ? text === 'true' : Number(text);
    return [...new Set([branches[1], branches[2]].flatMap((b) => graphProblems(asLiteral(b), type, path, existing, types)))];
  }
  if (value instanceof Expr || value === null) return [];
  const at = path.replace(/\.$/, '');
  if (type.$type === 'StringLiteralType') return value === type.value ? [] : [`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(type.value)}`];
  if (type.$type === 'UnionType') {
    const options = (type.elements ?? []).map((e) => graphProblems(value, typeIn(types, e), path, existing, types));
    if (options.some((o) => o.length === 0)) return [];
    const literals = (type.elements ?? []).map((e) => typeIn(types, e)).filter((t) => t.$type === 'StringLiteralType');
    return literals.length > 0 && typeof value === 'string'
      ? [`${at}: ${JSON.stringify(value)} is none of ${literals.map((t) => JSON.stringify(t.value)).join(', ')}`]
      : (options[0] ?? []);
  }
  if (type.$type === 'StringType' && typeof value !== 'string') return [`${at}: a string is expected`];
  if (type.$type === 'BooleanType' && typeof value !== 'boolean') return [`${at}: a boolean is expected`];
  if (type.$type === 'ArrayType') {
    if (!Array.isArray(value)) return [`${path}: an array is expected`];
    return value.flatMap((item, i) => graphProblems(item, typeIn(types, type.itemType as { $ref: string }), `${path.replace(/\.$/, '')}[${i}].`, false, types));
  }
  if (type.$type === 'IntegerType' && typeof value !== 'number') return [`${path.replace(/\.$/, '')}: an integer is expected`];
  if (type.$type !== 'ObjectType') return [];
  if (typeof value !== 'object' || Array.isArray(value)) return [`${path}: an object is expected`];
  const properties = type.properties ?? {};
  const problems: string[] = [];
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'dependsOn' && path === '') continue; // a Bicep keyword, not a property
    const property = properties[key];
    if (property === undefined && type.additionalProperties !== undefined)
      problems.push(...graphProblems(inner, typeIn(types, type.additionalProperties), `${path}${key}.`, false, types));
    else if (property === undefined) problems.push(`${path}${key}: no such property`);
    else if (property.flags & FLAG.readOnly) problems.push(`${path}${key}: read-only`);
    else if (existing && !(property.flags & FLAG.identifier)) problems.push(`${path}${key}: an existing resource names only its key`);
    else problems.push(...graphProblems(inner, typeIn(types, property.type), `${path}${key}.`, false, types));
  }
  for (const [key, property] of Object.entries(properties)) {
    const wanted = existing ? property.flags & FLAG.identifier : property.flags & FLAG.required && !(property.flags & FLAG.readOnly);
    if (wanted && !(key in value) && !['type', 'apiVersion'].includes(key)) problems.push(`${path}${key}: required`);
  }
  return problems;
}

function graphResources(): Array<{ file: BicepFile; resource: Resource }> {
  return [...files.values()].flatMap((f) => f.resources.filter((r) => r.type.startsWith('Microsoft.Graph/')).map((resource) => ({ file: f, resource })));
}

describe('Microsoft Entra ID as code: the Microsoft Graph Bicep extension', () => {
  const config = () => JSON.parse(readFileSync(join(INFRA, 'bicepconfig.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as { extensions: Record<string, string> };

  test('infra/bicepconfig.json names the extension at the version whose types are checked here, and every file using Graph declares it', () => {
    const { extensions } = config();
    expect(extensions).toEqual({ microsoftGraphV1: `br:mcr.microsoft.com/bicep/extensions/microsoftgraph/v1.0:${graphIndex.settings.version}` });
    const users = graphResources().map(({ file: f }) => f);
    expect(users.length).toBeGreaterThan(0);
    for (const f of new Set(users)) expect({ file: f.name, extensions: f.extensions }).toEqual({ file: f.name, extensions: ['microsoftGraphV1'] });
    for (const f of files.values()) for (const alias of f.extensions) expect(Object.keys(extensions)).toContain(alias);
  });

  test('every Graph resource is a published type, and sets only its published, writable properties (and every required one)', () => {
    const problems = graphResources().flatMap(({ file: f, resource }) => {
      const ref = graphIndex.resources[resource.typeWithVersion];
      if (ref === undefined) return [`${f.name}: ${resource.symbol}: ${resource.typeWithVersion} is not a published type`];
      return graphProblems(resource.body, graphType(graphType(ref).body as { $ref: string }), '', resource.existing).map(
        (p) => `${f.name}: ${resource.symbol}: ${p}`,
      );
    });
    expect(problems).toEqual([]);
  });

  test('the type check can fail: unknown, read-only and missing properties are each reported', () => {
    const application = graphType(graphType(graphIndex.resources['Microsoft.Graph/applications@v1.0']).body as { $ref: string });
    expect(
      graphProblems(
        { uniqueName: 'x', displayName: 'y', appId: 'z', signinAudience: 'AzureADMyOrg', api: { requestedAccessTokenVersions: 2 } },
        application,
        '',
      ),
    ).toEqual(['appId: read-only', 'signinAudience: no such property', 'api.requestedAccessTokenVersions: no such property']);
    expect(graphProblems({ uniqueName: 'x' }, application, '')).toEqual(['displayName: required']);
    expect(graphProblems({ uniqueName: 'x', displayName: 'y' }, application, '', true)).toEqual(['displayName: an existing resource names only its key']);
  });

  const apiModule = () => moduleFile('entraApi');
  const registration = () => resourceOf(moduleFile('entraApiRegistration'), 'Microsoft.Graph/applications');

  test('the API application has a stable key per environment: a redeploy finds the same application', () => {
    expect(exprText(mainModule('entraApi').params.uniqueName)).toBe("'${baseName}-api'");
    expect(exprText(resourceOf(apiModule(), 'Microsoft.Graph/applications').body.uniqueName)).toBe('uniqueName');
    expect(exprText(registration().body.uniqueName)).toBe('uniqueName');
    // The role id is derived, never generated: a new id on each deployment would orphan every grant.
    expect(apiModule().vars.get('roleId')?.text).toBe('guid(tenant().tenantId, uniqueName, roleValue)');
    const text = [apiModule(), moduleFile('entraApiRegistration'), moduleFile('entraPartners')].map((f) => readFileSync(f.path, 'utf8')).join('\n');
    expect(text).not.toMatch(/newGuid|utcNow|uniqueString\(deployment/);
  });

  test('it is the registration docs/contract.md §3 expects: v2 tokens, App ID URI api://<appId>, the app role for applications, the idtyp claim', () => {
    const body = registration().body;
    expect(at(body, 'api.requestedAccessTokenVersion')).toBe(2);
    expect(body.signInAudience).toBe('AzureADMyOrg');
    expect(body.identifierUris).toEqual([new Expr("'api://${appId}'")]);
    expect(body.appRoles).toEqual([
      expect.objectContaining({ id: new Expr('roleId'), value: new Expr('roleValue'), allowedMemberTypes: ['Application'], isEnabled: true }),
    ]);
    expect(at(body, 'optionalClaims.accessToken')).toEqual([{ name: 'idtyp', essential: false, additionalProperties: [] }]);
    const sp = resourceOf(apiModule(), 'Microsoft.Graph/servicePrincipals').body;
    expect(sp).toMatchObject({ appId: new Expr('app.appId'), appRoleAssignmentRequired: true });
  });

  test('the service accepts what Entra will issue: AUTH_AUDIENCE starts with the application id, and the required role is the role the application declares', () => {
    expect(exprText(mainModule('functionApp').params.authAudience)).toBe("join(union([entraApi.outputs.appId], authAudiences), ',')");
    expect(exprText(mainModule('entraApi').params.roleValue)).toBe('authRequiredRole');
    expect(exprText(mainModule('functionApp').params.authRequiredRole)).toBe('authRequiredRole');
  });

  test("each partner of the parameters file, and the smoke identity, is granted the API's role, and its Partners row is an output the deployment writes", () => {
    const grants = resourceOf(moduleFile('entraPartners'), 'Microsoft.Graph/appRoleAssignedTo').body;
    expect(grants).toEqual({ appRoleId: new Expr('roleId'), principalId: new Expr('clients[i].id'), resourceId: new Expr('apiServicePrincipalId') });
    expect(exprText(mainModule('entraPartners').params.partners)).toBe('concat(partners, smokePartners)');
    expect(exprText(mainModule('entraPartners').params.roleId)).toBe('entraApi.outputs.roleId');
    expect(mainFile().outputs.has('partnerRows')).toBe(true);
  });

  test('the smoke identity is a partner only when scripts/deploy.sh names its client, under the reserved smokePartnerId', () => {
    // The smoke check's token needs the app role and a Partners row: the same grant and row as a partner's.
    const smoke = mainFile().vars.get('smokePartners')?.text.replace(/\s+/g, ' ');
    expect(smoke).toBe('[ for clientAppId in (empty(smokeClientAppId) ? [] : [smokeClientAppId]): { partnerId: smokePartnerId clientAppId: clientAppId } ]');
    expect(mainFile().params.get('smokeClientAppId')).toMatchObject({ type: 'string', defaultValue: '' });
    expect(mainFile().params.get('smokePartnerId')).toMatchObject({ type: 'string', hasDefault: false });
  });

  test.each(ENVIRONMENTS)('%s: the smoke partner is reserved: a PartnerId no partner has, the one docs/contract.md §4.5 reserves', (env) => {
    const smoke = envValue(env, 'smokePartnerId') as string;
    expect(smoke).toMatch(/^[^/\\#?\p{Cc}]{1,256}$/u);
    expect((envValue(env, 'partners') as Array<{ partnerId: string }>).map((p) => p.partnerId)).not.toContain(smoke);
    const reserved = /^### 4\.5 [^]*?(?=^##)/m.exec(readFileSync(join(ROOT, 'docs', 'contract.md'), 'utf8'))?.[0] ?? '';
    expect(reserved).toContain(`\`${smoke}\``);
  });

  test.each(ENVIRONMENTS)('%s: each partner names a PartnerId and the application id of its client, once', (env) => {
    const partners = envValue(env, 'partners') as Array<Record<string, unknown>>;
    expect(Array.isArray(partners)).toBe(true);
    for (const partner of partners) {
      expect(Object.keys(partner).filter((k) => !['partnerId', 'clientAppId', 'active'].includes(k))).toEqual([]);
      expect(partner.partnerId).toMatch(/^[^/\\#?\p{Cc}]{1,256}$/u);
      expect(partner.clientAppId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      if ('active' in partner) expect(typeof partner.active).toBe('boolean');
    }
    const ids = partners.map((p) => p.clientAppId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('the deploying identity may write the Partners table and the stop list (to lift a stop) and nothing else of the data, only when named', () => {
    expect(roleAssignmentTexts(moduleFile('partnersWriter'), rolesNamed('Storage Table Data Contributor'))).toEqual([
      'Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables partnersTableName',
      'Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables stoppedClientsTableName',
    ]);
    expect(mainFile().root.text).toContain("module partnersWriter 'modules/partnersWriter.bicep' = if (!empty(partnerWriterPrincipalId)) {");
    expect(exprText(mainModule('partnersWriter').params.stoppedClientsTableName)).toBe('stoppedClientsTableName');
  });

  test("the stop identity's roles (issue #40): the bootstrap's stop-list role on the stop list and Storage Table Data Reader on Partners, when named", () => {
    const roles = { ...rolesNamed('Storage Table Data Reader'), stopRoleId: 'the stop-list role' };
    expect(roleAssignmentTexts(moduleFile('stopAccess'), roles)).toEqual([
      'Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables partnersTableName',
      'the stop-list role → Microsoft.Storage/storageAccounts/tableServices/tables stoppedClientsTableName',
    ]);
    expect(mainFile().root.text).toContain("module stopAccess 'modules/stopAccess.bicep' = if (!empty(stopPrincipalId)) {");
    expect(Object.fromEntries(Object.entries(mainModule('stopAccess').params).map(([k, v]) => [k, exprText(v)]))).toEqual({
      principalId: 'stopPrincipalId',
      stopRoleId: "guid(subscription().id, appName, 'stop-list')",
      storageAccountName: 'storage.outputs.name',
      partnersTableName: 'partnersTableName',
      stoppedClientsTableName: 'stoppedClientsTableName',
    });
    // The role main.bicep names is the one the bootstrap defines: the same expression over the same subscription and appName.
    const stopRole = file(BOOTSTRAP).resources.find((r) => r.symbol === 'stopRole') as Resource;
    expect(exprText(stopRole.body.name)).toBe(
      mainModule('stopAccess').params.stopRoleId instanceof Expr ? exprText(mainModule('stopAccess').params.stopRoleId) : '',
    );
    expect(file(BOOTSTRAP).params.get('appName')?.defaultValue).toBe(mainFile().params.get('appName')?.defaultValue);
    expect(mainFile().params.get('stopPrincipalId')).toMatchObject({ type: 'string', hasDefault: true, defaultValue: '' });
    // No other template names it: nothing else is granted to it.
    const naming = [...files.values()].filter((f) => /\bstopPrincipalId\b/.test(f.root.text)).map((f) => relative(INFRA, f.path));
    expect(naming.sort()).toEqual(['bootstrap.bicep', 'main.bicep', join('modules', 'pipelineIdentities.bicep'), join('modules', 'stopAccess.bicep')].sort());
    // scripts/deploy.sh passes the pipeline file's stopPrincipalId.
    expect(readFileSync(join(ROOT, 'scripts', 'deploy.sh'), 'utf8')).toContain('writer_args+=("stopPrincipalId=${stop_principal}")');
  });

  test("the bootstrap's storageAccountName is main.bicep's storage account name, over the same resource group id", () => {
    // The stop identity cannot read the deployment, so the stop-client workflow takes the account from the
    // pipeline file, which the bootstrap fills: the same expression, resourceGroup().id there being the
    // group's id here (scripts/deploy.sh also refuses a pipeline file that names another account).
    const bootstrapName = /^output storageAccountName string = (.+)$/m.exec(file(BOOTSTRAP).root.text)?.[1] ?? '';
    const suffix = mainFile().vars.get('suffix')?.text ?? '';
    expect(suffix).toBe('take(uniqueString(resourceGroup().id), 6)');
    const mainName = exprText(mainModule('storage').params.name).replace('${suffix}', `\${${suffix}}`);
    expect(bootstrapName.replace('uniqueString(group.id)', 'uniqueString(resourceGroup().id)')).toBe(mainName);
    expect(file(BOOTSTRAP).params.get('appName')?.defaultValue).toBe(mainFile().params.get('appName')?.defaultValue);
    for (const env of ENVIRONMENTS) expect(envValue(env, 'appName')).toBeUndefined();
    expect(readFileSync(join(ROOT, 'scripts', 'deploy.sh'), 'utf8')).toContain('the stop-client workflow would not find the Partners table');
  });
});

// ----------------------------------------------------------------------------- what each identity may do to the tables (issue #40)

describe("what each identity may do to the tables, from infra/'s role assignments and Microsoft's definitions of the roles and operations", () => {
  const TABLES = { partnersTableName: 'Partners', loansTableName: 'Loans', drawsTableName: 'DrawRequests', idempotencyTableName: 'IdempotencyKeys' };
  const ALL = ['Partners', 'Loans', 'DrawRequests', 'IdempotencyKeys', 'StoppedClients'];
  const STOP_ROLE = '5ca1ab1e-0000-4000-8000-000000005709';
  const RECORDS_ROLE = '5ca1ab1e-0000-4000-8000-00000000ec02';
  const KEYS_ROLE = '5ca1ab1e-0000-4000-8000-00000000ce15';
  async function roles(): Promise<Record<string, Permission[]>> {
    const builtIn = Object.fromEntries(Object.entries(builtInTableRoles()).map(([id, role]) => [id, role.permissions]));
    return {
      ...builtIn,
      [STOP_ROLE]: await bootstrapRole('stopRole'),
      [RECORDS_ROLE]: await bootstrapRole('recordsRole'),
      [KEYS_ROLE]: await bootstrapRole('keysRole'),
    };
  }
  const stopAccessOf = async () =>
    tableAccess(
      await assignmentsOf('stopAccess', {
        principalId: 'stop',
        stopRoleId: STOP_ROLE,
        storageAccountName: 'stdrawreqdevabc123',
        partnersTableName: 'Partners',
        stoppedClientsTableName: 'StoppedClients',
      }),
      await roles(),
      ALL,
    );

  test("the fixture is Microsoft's: the built-in storage data roles by their ids, and Insert Entity needs add/action (or write) alone", () => {
    const byName = (pairs: string[][]) => pairs.sort((a, b) => a[0].localeCompare(b[0]));
    expect(byName(Object.entries(builtInTableRoles()).map(([id, role]) => [role.roleName, id]))).toEqual(
      byName(
        Object.entries(rolesNamed('Storage Table Data Contributor', 'Storage Table Data Reader', 'Storage Blob Data Owner')).map(([id, name]) => [name, id]),
      ),
    );
    expect(tableOperations()['Insert Entity']).toEqual([
      ['Microsoft.Storage/storageAccounts/tableServices/tables/entities/write'],
      ['Microsoft.Storage/storageAccounts/tableServices/tables/entities/add/action'],
    ]);
  });

  test('the stop identity can stop a client (insert a stop-list row) and read a Partners row, and nothing else: no lift of a stop, no change of a PartnerId, no row or table deleted', async () => {
    const access = await stopAccessOf();
    expect(access).toEqual({
      StoppedClients: ['Insert Entity'],
      Partners: ['Query Entities'],
      Loans: [],
      DrawRequests: [],
      IdempotencyKeys: [],
    });
    // Each thing it must not do, by name: lifting a stop is a delete, a merge or a replace of its row.
    for (const op of ['Delete Entity', 'Merge Entity', 'Update Entity', 'Insert Or Replace Entity', 'Insert Or Merge Entity', 'Delete Table'] as const)
      expect({ op, allowed: access.StoppedClients.includes(op) }).toEqual({ op, allowed: false });
    for (const op of ['Merge Entity', 'Update Entity', 'Insert Entity', 'Insert Or Replace Entity', 'Delete Entity', 'Delete Table'] as const)
      expect({ op, allowed: access.Partners.includes(op) }).toEqual({ op, allowed: false });
  });

  test("the bootstrap's stop-list role is the one data action Insert Entity needs, and no control action; each role definition sets only the published Permission properties", () => {
    const stopRole = file(BOOTSTRAP).resources.find((r) => r.symbol === 'stopRole') as Resource;
    expect(at(stopRole.body, 'properties.permissions')).toEqual([
      { actions: [], notActions: [], dataActions: ['Microsoft.Storage/storageAccounts/tableServices/tables/entities/add/action'], notDataActions: [] },
    ]);
    // Azure/bicep-types-az (generated/authorization/microsoft.authorization/2022-04-01/types.json, 924ef59e):
    // Permission has actions, notActions, dataActions and notDataActions.
    for (const role of file(BOOTSTRAP).resources.filter((r) => r.type === 'Microsoft.Authorization/roleDefinitions'))
      for (const permission of at(role.body, 'properties.permissions') as ObjectValue[])
        expect({
          role: role.symbol,
          keys: Object.keys(permission).filter((k) => !['actions', 'notActions', 'dataActions', 'notDataActions'].includes(k)),
        }).toEqual({
          role: role.symbol,
          keys: [],
        });
  });

  test('the check can fail: with Storage Table Data Contributor on the stop list, as on Partners before issue #40, the stop identity could lift a stop and delete the table', async () => {
    const contributor = Object.keys(rolesNamed('Storage Table Data Contributor'))[0];
    const before = tableAccess(
      [
        {
          symbol: 'partnersStopper',
          principalId: 'stop',
          roleId: contributor,
          scope: { type: 'Microsoft.Storage/storageAccounts/tableServices/tables', name: 'Partners' },
        },
      ],
      await roles(),
      ['Partners'],
    );
    expect(before.Partners).toEqual(expect.arrayContaining(['Merge Entity', 'Update Entity', 'Delete Entity', 'Delete Table', 'Insert Or Replace Entity']));
  });

  test("the app's identity reads Partners, Loans and the stop list, inserts draws, and inserts and replaces key rows: no change of a draw, no delete of any row or table", async () => {
    const access = tableAccess(
      await assignmentsOf('roleAssignments', {
        principalId: 'app',
        storageAccountName: 'st',
        appInsightsName: 'appi',
        stoppedClientsTableName: 'StoppedClients',
        recordsRoleId: RECORDS_ROLE,
        keysRoleId: KEYS_ROLE,
        ...TABLES,
      }),
      await roles(),
      ALL,
    );
    expect(access).toEqual({
      Partners: ['Query Entities'],
      Loans: ['Query Entities'],
      StoppedClients: ['Query Entities'],
      DrawRequests: ['Query Entities', 'Insert Entity'],
      IdempotencyKeys: ['Query Entities', 'Insert Entity', 'Insert Or Merge Entity', 'Insert Or Replace Entity', 'Update Entity', 'Merge Entity'],
    });
  });
});

// ----------------------------------------------------------------------------- the plan identity's role (issue #40)

describe("the plan identity's what-if role reads every resource the templates declare, and no telemetry data", () => {
  /**
   * The reads of Log Analytics and Application Insights data and keys, as Microsoft names them: "Manage access
   * to Log Analytics workspaces" (query/read, query/*\/read, tables/query/read) and Log Analytics Reader's
   * NotActions (sharedKeys/read); the Azure Monitor resource provider operations (components' Query, Api,
   * Events, ExtendQueries, ApiKeys and GetToken reads, generateLiveToken, Logs/Read and a table's
   * Logs/<table>/Read). Each is a read, so `*\/read` grants it unless taken out.
   */
  const DATA_READS = [
    'Microsoft.OperationalInsights/workspaces/query/read',
    'Microsoft.OperationalInsights/workspaces/query/AppEvents/read',
    'Microsoft.OperationalInsights/workspaces/tables/query/read',
    'Microsoft.OperationalInsights/workspaces/sharedKeys/read',
    'Microsoft.Insights/Components/Query/Read',
    'Microsoft.Insights/Components/Api/Read',
    'Microsoft.Insights/Components/Events/Read',
    'Microsoft.Insights/Components/ExtendQueries/Read',
    'Microsoft.Insights/Components/ApiKeys/Read',
    'Microsoft.Insights/Components/GetToken/Read',
    'Microsoft.Insights/generateLiveToken/Read',
    'Microsoft.Insights/Logs/Read',
    'Microsoft.Insights/Logs/AppRequests/Read',
  ];
  /** Every Azure resource type infra/ declares or refers to (Microsoft Graph's are not evaluated by what-if). */
  const declaredTypes = () =>
    [...new Set([...files.values()].flatMap((f) => f.resources.map((r) => r.type)))]
      .filter((t) => !t.startsWith('Microsoft.Graph/') && t !== 'Microsoft.Resources/resourceGroups')
      .sort();
  const whatIf = () => bootstrapRole('whatIfRole');

  test('no telemetry data, no data action at all', async () => {
    const role = await whatIf();
    expect(DATA_READS.filter((action) => grants(role, action))).toEqual([]);
    expect(role.every((p) => p.dataActions.length === 0)).toBe(true);
  });

  test("what-if with --validation-level ProviderNoRbac still works: every declared resource type's read, the what-if and validate actions, and no write", async () => {
    const role = await whatIf();
    expect(declaredTypes().length).toBeGreaterThan(20);
    expect(declaredTypes().filter((type) => !grants(role, `${type}/read`))).toEqual([]);
    expect(['Microsoft.Resources/deployments/whatIf/action', 'Microsoft.Resources/deployments/validate/action'].filter((a) => !grants(role, a))).toEqual([]);
    expect(declaredTypes().filter((type) => grants(role, `${type}/write`) || grants(role, `${type}/delete`))).toEqual([]);
    expect(grants(role, 'Microsoft.Storage/storageAccounts/listKeys/action')).toBe(false);
  });

  test('the check can fail: the role before issue #40 (*/read, nothing taken out) read every one of them', () => {
    const before: Permission[] = [{ actions: ['*/read'], notActions: [], dataActions: [], notDataActions: [] }];
    expect(DATA_READS.filter((action) => grants(before, action))).toEqual(DATA_READS);
    expect(actionMatches('Microsoft.OperationalInsights/workspaces/query/*/read', 'microsoft.operationalinsights/workspaces/query/Usage/read')).toBe(true);
    expect(actionMatches('Microsoft.OperationalInsights/workspaces/query/*/read', 'Microsoft.OperationalInsights/workspaces/query/read')).toBe(false);
  });
});

describe('bootstrap: the pipeline signs in with federated credentials declared in Bicep, no secret', () => {
  const identities = () => moduleFile('pipelineIdentities');

  test('bootstrap.bicep deploys at subscription scope: the group, the custom roles, the identities, their Graph permissions', () => {
    expect(file(BOOTSTRAP).root.text).toMatch(/^targetScope = 'subscription'$/m);
    expect(
      file(BOOTSTRAP)
        .resources.map((r) => r.type)
        .sort(),
    ).toEqual([
      'Microsoft.Authorization/roleDefinitions',
      'Microsoft.Authorization/roleDefinitions',
      'Microsoft.Authorization/roleDefinitions',
      'Microsoft.Authorization/roleDefinitions',
      'Microsoft.Authorization/roleDefinitions',
      'Microsoft.Graph/appRoleAssignedTo',
      'Microsoft.Graph/servicePrincipals',
      'Microsoft.Resources/resourceGroups',
    ]);
  });

  test("each identity trusts GitHub's issuer for the Entra token exchange only, from one workflow file of main, at main: deploy-environment.yml in <env>, deploy.yml, stop-client.yml in <env>-stop", () => {
    const credentials = identities().resources.filter((r) => r.type === 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials');
    expect(credentials.map((c) => [exprText(c.body.parent), exprText(at(c.body, 'properties.subject'))])).toEqual([
      ['deploy', "'${form.prefix}:environment:${environmentName}:${onMain}/deploy-environment.yml@${mainRef}'"],
      ['plan', "'${form.prefix}:ref:${mainRef}:${onMain}/deploy.yml@${mainRef}'"],
      ['stop', "'${form.prefix}:environment:${environmentName}-stop:${onMain}/stop-client.yml@${mainRef}'"],
    ]);
    for (const c of credentials) {
      expect(exprText(at(c.body, 'properties.issuer'))).toBe('githubIssuer');
      expect(at(c.body, 'properties.audiences')).toEqual([new Expr('exchangeAudience')]);
    }
    expect(literalVar(identities(), 'githubIssuer')).toBe(GITHUB_ISSUER);
    expect(literalVar(identities(), 'exchangeAudience')).toBe(AZURE_AUDIENCE);
    expect(literalVar(identities(), 'mainRef')).toBe('refs/heads/main');
  });

  test('the credentials of one identity are written one at a time (Entra answers 409 to concurrent writes under one identity)', () => {
    const text = identities().root.text;
    for (const symbol of ['deployFromMain', 'planFromMain', 'stopFromMain']) expect(text).toMatch(new RegExp(`@batchSize\\(1\\)\\nresource ${symbol} `));
  });

  test('the deploying identity may assign only the roles infra/ assigns (the app, the deployer, the stop identity, the on-call group); the plan identity writes nothing', () => {
    const assigned = [
      ...new Set(
        [...files.values()]
          .filter((f) => ['roleAssignments', 'partnersWriter', 'stopAccess', 'onCallAccess'].map((m) => join(INFRA, 'modules', `${m}.bicep`)).includes(f.path))
          .flatMap((f) => [...f.vars.entries()].filter(([, node]) => /^'[0-9a-f-]{36}'$/.test(node.text)).map(([name]) => stringOf(literalVar(f, name)))),
      ),
    ].sort();
    expect((literalVar(identities(), 'builtInAssignableRoles') as string[]).slice().sort()).toEqual(assigned);
    // And the bootstrap's own roles main.bicep assigns (the stop identity's, the app's): the bootstrap passes their ids.
    expect(exprText(literalVar(identities(), 'assignableRoles')).replace(/\s+/g, ' ')).toBe(
      'concat(builtInAssignableRoles, [ stopRoleId recordsRoleId keysRoleId ])',
    );
    expect(exprText(file(BOOTSTRAP).modules.find((m) => m.symbol === 'identities')?.params.stopRoleId)).toBe('stopRole.name');
    expect(exprText(file(BOOTSTRAP).modules.find((m) => m.symbol === 'identities')?.params.recordsRoleId)).toBe('recordsRole.name');
    expect(exprText(file(BOOTSTRAP).modules.find((m) => m.symbol === 'identities')?.params.keysRoleId)).toBe('keysRole.name');
    const condition = identities().vars.get('assignmentCondition')?.text ?? '';
    expect(condition).toContain("ActionMatches{\\'Microsoft.Authorization/roleAssignments/write\\'}");
    expect(condition).toContain("ActionMatches{\\'Microsoft.Authorization/roleAssignments/delete\\'}");
    const byPrincipal = identities()
      .resources.filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
      .map((r) => [exprText(at(r.body, 'properties.principalId')), exprText(at(r.body, 'properties.roleDefinitionId'))]);
    expect(byPrincipal.filter(([principal]) => principal.startsWith('plan.'))).toEqual([
      ['plan.properties.principalId', "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', whatIfRoleId)"],
    ]);
    // The stop identity holds nothing at the bootstrap: its roles are main.bicep's (stopAccess, above).
    expect(byPrincipal.filter(([principal]) => principal.startsWith('stop.'))).toEqual([]);
  });

  test('only the deploy identity gets Microsoft Graph permissions (what-if reads no Graph resource)', () => {
    const grants = file(BOOTSTRAP).resources.filter((r) => r.type === 'Microsoft.Graph/appRoleAssignedTo');
    expect(grants.map((g) => exprText(g.body.principalId))).toEqual(['identities.outputs.deployPrincipalId']);
  });

  test('no secret: no client secret or key credential is declared for any identity or application', () => {
    const text = [...files.values()].map((f) => f.root.text).join('\n');
    expect(text).not.toMatch(/passwordCredentials|keyCredentials|clientSecret/);
  });
});

describe("federated credentials (issue #40): only main's reviewed workflows sign in, in GitHub's legacy and immutable subject forms, whether or not an environment exists", () => {
  // GitHub's documented example owner and repository, with small ids (docs/deploy.md, "Which subject GitHub sends"),
  // under the subject template scripts/githubSettings.cjs applies.
  const REPOSITORY = { owner: 'octo-org', ownerId: '123', name: 'octo-repo', id: '456', subjectClaimKeys: SUBJECT_CLAIM_KEYS };
  const LEGACY: GitHubRepository = { ...REPOSITORY, immutableSubject: false };
  const IMMUTABLE: GitHubRepository = { ...REPOSITORY, immutableSubject: true };
  const SHAPES = [
    ['legacy', LEGACY],
    ['immutable', IMMUTABLE],
  ] as const;
  const MAIN = 'refs/heads/main';
  const workflowFile = (name: string, ref = MAIN) => `octo-org/octo-repo/.github/workflows/${name}@${ref}`;
  const bootstrap = (env: string, extra: Record<string, string> = {}) =>
    bootstrapCredentials({ environmentName: env, githubRepository: 'octo-org/octo-repo', githubOwnerId: '123', githubRepositoryId: '456', ...extra });
  /** deploy-environment.yml's deploy job (called by deploy.yml): in the GitHub environment, on a push to main or a dispatch. */
  const deployJob = (env: string): GitHubJob => ({ environment: env, event: 'push', ref: MAIN, jobWorkflowRef: workflowFile('deploy-environment.yml') });
  /** deploy.yml's what-if job on a push to main: no environment. */
  const planJob: GitHubJob = { event: 'push', ref: MAIN, jobWorkflowRef: workflowFile('deploy.yml') };
  /** stop-client.yml's stop job, dispatched from main, in <env>-stop. */
  const stopJob = (env: string): GitHubJob => ({
    environment: `${env}-stop`,
    event: 'workflow_dispatch',
    ref: MAIN,
    jobWorkflowRef: workflowFile('stop-client.yml'),
  });
  const identitiesOf = (credentials: FederatedCredential[], token: OidcToken) => matching(credentials, token).map((c) => c.identity);

  test("the tokens are built exactly as GitHub documents them, under the default template and under the repository's template", () => {
    const plain = { ...IMMUTABLE, subjectClaimKeys: undefined };
    expect(githubSubject(plain, deployJob('prod'))).toBe('repo:octo-org@123/octo-repo@456:environment:prod');
    expect(githubSubject({ ...plain, immutableSubject: false }, deployJob('prod'))).toBe('repo:octo-org/octo-repo:environment:prod');
    expect(githubSubject(plain, { event: 'pull_request', ref: 'refs/pull/7/merge' })).toBe('repo:octo-org@123/octo-repo@456:pull_request');
    expect(githubSubject({ owner: 'octo-org', ownerId: '123456', name: 'octo-repo', id: '456789', immutableSubject: true }, { event: 'push', ref: MAIN })).toBe(
      'repo:octo-org@123456/octo-repo@456789:ref:refs/heads/main',
    );
    expect(githubSubject({ ...plain, immutableSubject: false }, deployJob('Production:V1'))).toBe('repo:octo-org/octo-repo:environment:Production%3AV1');
    // GitHub's example of repo, context and job_workflow_ref: "repo:octo-org/octo-repo:environment:prod:job_workflow_ref:octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main"
    expect(
      githubSubject(
        { ...LEGACY, subjectClaimKeys: ['repo', 'context', 'job_workflow_ref'] },
        { environment: 'prod', event: 'push', ref: MAIN, jobWorkflowRef: 'octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main' },
      ),
    ).toBe('repo:octo-org/octo-repo:environment:prod:job_workflow_ref:octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main');
    expect(githubSubject(IMMUTABLE, deployJob('prod'))).toBe(
      'repo:octo-org@123/octo-repo@456:environment:prod:ref:refs/heads/main:job_workflow_ref:octo-org/octo-repo/.github/workflows/deploy-environment.yml@refs/heads/main',
    );
  });

  describe.each(ENVIRONMENTS)('%s', (env) => {
    const other = env === 'dev' ? 'prod' : 'dev';

    test.each(SHAPES)(
      "%s subjects: main's deploy job in the GitHub environment matches exactly one credential, of the deploy identity",
      async (_shape, repository) => {
        const credentials = await bootstrap(env);
        expect(identitiesOf(credentials, githubToken(repository, deployJob(env)))).toEqual([`id-drawreq-${env}-deploy`]);
        // A rollback (a dispatch of deploy.yml on main) calls the same file in the same environment.
        expect(identitiesOf(credentials, githubToken(repository, { ...deployJob(env), event: 'workflow_dispatch' }))).toEqual([`id-drawreq-${env}-deploy`]);
      },
    );

    test.each(SHAPES)(
      "%s subjects: main's stop job in <env>-stop matches exactly one credential, of the stop identity, and no other environment's",
      async (_shape, repository) => {
        const credentials = await bootstrap(env);
        expect(identitiesOf(credentials, githubToken(repository, stopJob(env)))).toEqual([`id-drawreq-${env}-stop`]);
        expect(identitiesOf(credentials, githubToken(repository, stopJob(other)))).toEqual([]);
        expect(identitiesOf(credentials, githubToken(repository, deployJob(env)))).not.toContain(`id-drawreq-${env}-stop`);
      },
    );

    test.each(SHAPES)("%s subjects: main's what-if job matches exactly one credential, of the plan identity", async (_shape, repository) => {
      const credentials = await bootstrap(env);
      expect(identitiesOf(credentials, githubToken(repository, planJob))).toEqual([`id-drawreq-${env}-plan`]);
    });

    test.each(SHAPES)(
      "%s subjects: a branch's job in <env> or <env>-stop (its own file, a changed copy, or main's file called from it), a pull request, another workflow of main: none",
      async (_shape, repository) => {
        const credentials = await bootstrap(env);
        const branch = 'refs/heads/feature/x';
        const jobs: GitHubJob[] = [
          // A branch's own workflow naming the environment: GitHub creates a missing one, without protection.
          { environment: env, event: 'push', ref: branch, jobWorkflowRef: workflowFile('evil.yml', branch) },
          { environment: `${env}-stop`, event: 'workflow_dispatch', ref: branch, jobWorkflowRef: workflowFile('evil.yml', branch) },
          // The branch's copy of the real workflows (its refusal step removed, say), dispatched from the branch.
          { ...stopJob(env), ref: branch, jobWorkflowRef: workflowFile('stop-client.yml', branch) },
          { ...deployJob(env), ref: branch, jobWorkflowRef: workflowFile('deploy-environment.yml', branch) },
          // A branch's workflow calling main's reusable deploy-environment.yml: main's file, the branch's run.
          { ...deployJob(env), ref: branch },
          // A pull request: no Azure token at all now (docs/deploy.md, "Identities").
          { event: 'pull_request', ref: 'refs/pull/7/merge', jobWorkflowRef: workflowFile('deploy.yml', 'refs/pull/7/merge') },
          { environment: env, event: 'pull_request', ref: 'refs/pull/7/merge', jobWorkflowRef: workflowFile('deploy.yml', 'refs/pull/7/merge') },
          // Another workflow of main naming the environment, or deploy.yml's job in an environment.
          { environment: env, event: 'push', ref: MAIN, jobWorkflowRef: workflowFile('other.yml') },
          { ...planJob, environment: env },
          deployJob(other),
          deployJob('staging'),
        ];
        const signedIn = jobs.filter((job) => identitiesOf(credentials, githubToken(repository, job)).length > 0);
        expect(signedIn.map((job) => githubSubject(repository, job))).toEqual([]);
        expect(identitiesOf(credentials, githubToken({ ...repository, owner: 'Octo-Org' }, deployJob(env)))).toEqual([]); // Entra compares case-sensitively
        expect(identitiesOf(credentials, githubToken({ ...repository, name: 'octo-repo-2' }, deployJob(env)))).toEqual([]);
      },
    );

    test.each(SHAPES)("%s subjects: under GitHub's default template (the repository's template reset) no job signs in at all", async (_shape, repository) => {
      const credentials = await bootstrap(env);
      const reset = { ...repository, subjectClaimKeys: undefined };
      for (const job of [deployJob(env), planJob, stopJob(env), { event: 'pull_request', ref: 'refs/pull/7/merge' }])
        expect({ sub: githubSubject(reset, job), identities: identitiesOf(credentials, githubToken(reset, job)) }).toEqual({
          sub: githubSubject(reset, job),
          identities: [],
        });
    });

    test('an immutable token of another repository id, or of another owner id, matches none (a recycled name cannot sign in)', async () => {
      const credentials = await bootstrap(env);
      for (const stranger of [
        { ...IMMUTABLE, id: '999' },
        { ...IMMUTABLE, ownerId: '999' },
        { ...IMMUTABLE, id: '4567' },
      ])
        for (const job of [deployJob(env), planJob, stopJob(env)])
          expect({ sub: githubSubject(stranger, job), identities: identitiesOf(credentials, githubToken(stranger, job)) }).toEqual({
            sub: githubSubject(stranger, job),
            identities: [],
          });
    });

    test('a token for another audience or from another issuer matches none', async () => {
      const credentials = await bootstrap(env);
      const token = githubToken(IMMUTABLE, deployJob(env));
      expect(matching(credentials, { ...token, aud: 'https://github.com/octo-org' })).toEqual([]);
      expect(matching(credentials, { ...token, iss: 'https://token.actions.githubusercontent.com/octo-enterprise' })).toEqual([]);
    });

    test('githubSubjectFormat immutable trusts the immutable form only: a legacy token matches none', async () => {
      const credentials = await bootstrap(env, { githubSubjectFormat: 'immutable' });
      expect(identitiesOf(credentials, githubToken(IMMUTABLE, deployJob(env)))).toEqual([`id-drawreq-${env}-deploy`]);
      expect(identitiesOf(credentials, githubToken(IMMUTABLE, planJob))).toEqual([`id-drawreq-${env}-plan`]);
      expect(identitiesOf(credentials, githubToken(LEGACY, deployJob(env)))).toEqual([]);
      expect(identitiesOf(credentials, githubToken(LEGACY, planJob))).toEqual([]);
    });

    test('githubSubjectFormat legacy trusts the legacy form only', async () => {
      const credentials = await bootstrap(env, { githubSubjectFormat: 'legacy' });
      expect(credentials.map((c) => [c.identity, c.name])).toEqual([
        [`id-drawreq-${env}-deploy`, `github-main-deploy-${env}`],
        [`id-drawreq-${env}-plan`, 'github-main-plan'],
        [`id-drawreq-${env}-stop`, `github-main-stop-${env}`],
      ]);
      expect(identitiesOf(credentials, githubToken(LEGACY, deployJob(env)))).toEqual([`id-drawreq-${env}-deploy`]);
      expect(identitiesOf(credentials, githubToken(IMMUTABLE, deployJob(env)))).toEqual([]);
    });

    test('the credentials take none of the names the bootstrap before issue #40 gave, so re-running it on an existing environment rewrites none in place (docs/deploy.md, "Migration")', async () => {
      const names = (await bootstrap(env)).map((c) => c.name);
      expect(names.filter((name) => Object.values(EARLIER_CREDENTIALS(env)).flat().includes(name))).toEqual([]);
    });
  });

  test.each(['both', 'immutable', 'legacy'])(
    "githubSubjectFormat %s: each identity stays within Entra's 20 credentials, with unique, valid names and no issuer and subject twice",
    async (format) => {
      for (const env of ENVIRONMENTS) {
        const credentials = await bootstrap(env, { githubSubjectFormat: format });
        const byIdentity = new Map<string, FederatedCredential[]>();
        for (const c of credentials) byIdentity.set(c.identity, [...(byIdentity.get(c.identity) ?? []), c]);
        expect([...byIdentity.keys()].sort()).toEqual([`id-drawreq-${env}-deploy`, `id-drawreq-${env}-plan`, `id-drawreq-${env}-stop`]);
        for (const [identity, own] of byIdentity) {
          // With the earlier credentials an environment keeps until the migration deletes them (two per identity).
          expect({ identity, count: own.length + 2 <= MAX_CREDENTIALS_PER_IDENTITY }).toEqual({ identity, count: true });
          expect(new Set(own.map((c) => c.name)).size).toBe(own.length);
          expect(new Set(own.map((c) => `${c.issuer} ${c.subject}`)).size).toBe(own.length); // Entra: "Issuer and subject combination already exists"
          for (const c of own) expect(c.name).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{2,119}$/); // 3-120 characters, alphanumeric first
        }
      }
    },
  );

  /** The credentials the `az identity federated-credential delete` commands of a docs/deploy.md section delete, as run. */
  const credentialsDeletedBy = (section: string, env: string): string[] =>
    azCallsOf(section, 'federated-credential delete', { env })
      .filter((args) => args.slice(0, 3).join(' ') === 'identity federated-credential delete')
      .map((args) => {
        expect(optionOf(args, '--resource-group')).toBe(`rg-drawreq-${env}`);
        return `${optionOf(args, '--identity-name')}/${optionOf(args, '--name')}`;
      })
      .sort();

  test.each(ENVIRONMENTS)(
    '%s: narrowing to the immutable form deletes by hand the legacy credential of each of the three identities, and nothing else (issue #41 §3 item 3)',
    async (env) => {
      const both = await bootstrap(env);
      const immutable = await bootstrap(env, { githubSubjectFormat: 'immutable' });
      const legacy = both.filter((c) => c.subject.startsWith('repo:octo-org/octo-repo:')).map((c) => `${c.identity}/${c.name}`);
      expect(new Set(legacy.map((c) => c.split('/')[0])).size).toBe(3);
      expect(credentialsDeletedBy('### Which subject GitHub sends', env)).toEqual(legacy.sort());
      // What is left is what the bootstrap declares with githubSubjectFormat=immutable.
      expect(both.filter((c) => !legacy.includes(`${c.identity}/${c.name}`)).map((c) => c.name)).toEqual(immutable.map((c) => c.name));
    },
  );

  test.each(ENVIRONMENTS)("%s: the migration deletes each identity's earlier credentials, in both forms, and none of the bootstrap's", (env) => {
    const earlier = Object.entries(EARLIER_CREDENTIALS(env)).flatMap(([identity, names]) => names.map((name) => `${identity}/${name}`));
    expect(credentialsDeletedBy('## Migration of an existing environment', env)).toEqual(earlier.sort());
  });

  test('the evaluation can fail: it refuses a construct it does not know rather than guessing its value', async () => {
    const source =
      "param owner string\nvar known = split('octo-org/octo-repo', '/')[1]\nvar unknownFunction = uniqueString(owner)\nvar unknownName = '${nobody}'\nvar outOfBounds = split('a', '/')[1]\nvar notANumber = int('12a')\n";
    const root = (await bicepParser()).parse(source).rootNode;
    const snippet = new BicepEvaluation('snippet.bicep', root, { owner: 'octo-org' });
    expect(snippet.variable('known')).toBe('octo-repo');
    expect(() => snippet.variable('unknownFunction')).toThrow(/the function uniqueString\(\)/);
    expect(() => snippet.variable('unknownName')).toThrow(/an unknown identifier nobody/);
    expect(() => snippet.variable('outOfBounds')).toThrow(/index 1 out of bounds/);
    expect(() => snippet.variable('notANumber')).toThrow(/not a whole number/);
    expect(() => new BicepEvaluation('snippet.bicep', root, { repository: 'x' })).toThrow(/no parameter repository/);
  });

  test('the bootstrap trusts both forms unless told otherwise (docs/decisions/0092-the-bootstrap-trusts-both-forms-of-githubs-subject-by.md)', async () => {
    expect(file(BOOTSTRAP).params.get('githubSubjectFormat')?.defaultValue).toBe('both');
    expect((await bootstrap('dev')).map((c) => c.name)).toEqual([
      'github-main-deploy-dev',
      'github-main-deploy-dev-immutable',
      'github-main-plan',
      'github-main-plan-immutable',
      'github-main-stop-dev',
      'github-main-stop-dev-immutable',
    ]);
  });

  test('a deployment given a name where an id belongs, or an unknown format, fails instead of creating a credential nothing matches', async () => {
    await expect(bootstrap('dev', { githubOwnerId: 'octo-org' })).rejects.toThrow(/int\("octo-org"\): not a whole number/);
    await expect(bootstrap('dev', { githubRepositoryId: '' })).rejects.toThrow(/shorter than @minLength/);
    await expect(bootstrap('dev', { githubSubjectFormat: 'sometimes' })).rejects.toThrow(/is not one of/);
    await expect(bootstrap('staging')).rejects.toThrow(/is not one of/);
  });
});

// ----------------------------------------------------------------------------- network isolation and zones

/** Subsets of Azure/bicep-types-az's types.json (tests/fixtures/azure-resource-types: each names its commit and path). */
const AZURE_TYPES_DIR = join(ROOT, 'tests', 'fixtures', 'azure-resource-types');
type AzureTypes = { source: { repository: string; commit: string; path: string }; resources: Record<string, { $ref: string }>; types: GraphType[] };
const azureTypes = (): AzureTypes[] =>
  readdirSync(AZURE_TYPES_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(AZURE_TYPES_DIR, f), 'utf8')) as AzureTypes);
/**
 * Resource types whose every declaration is checked against the published types: the network and what
 * issue #34 changes (GitHub's runner network settings included), every role assignment (on-call's, issue #33) and every log alert rule (the ingestion
 * budget's, issue #32).
 */
const CHECKED_TYPE =
  /^Microsoft\.Network\/|^GitHub\.Network\/|^Microsoft\.Storage\/storageAccounts$|^Microsoft\.Web\/(serverfarms|sites)$|^Microsoft\.Authorization\/roleAssignments$|^Microsoft\.Insights\/scheduledQueryRules$/;
/** Bicep keywords of a resource body, not properties of the type. */
const BICEP_KEYWORDS = ['parent', 'scope', 'dependsOn'];

function azureProblems(typeWithVersion: string, body: ObjectValue, existing = false): string[] {
  const found = azureTypes().find((t) => t.resources[typeWithVersion] !== undefined);
  if (found === undefined) return [`${typeWithVersion} is not a published type in tests/fixtures/azure-resource-types`];
  const resourceType = typeIn(found.types, found.resources[typeWithVersion]);
  const properties = Object.fromEntries(Object.entries(body).filter(([key]) => !BICEP_KEYWORDS.includes(key)));
  // An existing resource names itself (and its parent) only.
  if (existing) return Object.keys(properties).flatMap((key) => (key === 'name' ? [] : [`${key}: an existing resource names only its key`]));
  return graphProblems(properties, typeIn(found.types, resourceType.body as { $ref: string }), '', existing, found.types);
}

describe('network isolation and zones (issue #34): published Azure types and the wiring', () => {
  const checked = () => [...files.values()].flatMap((f) => f.resources.filter((r) => CHECKED_TYPE.test(r.type)).map((resource) => ({ file: f, resource })));

  test('each fixture is a subset of a types.json of Azure/bicep-types-az at a named commit', () => {
    for (const t of azureTypes()) {
      expect(t.source.repository).toBe('Azure/bicep-types-az');
      expect(t.source.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(t.source.path).toMatch(/^generated\/[a-z0-9_-]+\/(microsoft|github)\.[a-z]+\/\d{4}-\d{2}-\d{2}\/types\.json$/);
      for (const [name, ref] of Object.entries(t.resources)) expect({ name, type: typeIn(t.types, ref).$type }).toEqual({ name, type: 'ResourceType' });
    }
  });

  test('every network, storage account, plan, site, role assignment and log alert rule is a published type of its API version and sets only published, writable properties', () => {
    const all = checked();
    expect(all.map(({ resource }) => resource.type)).toEqual(
      expect.arrayContaining([
        'Microsoft.Network/virtualNetworks',
        'Microsoft.Network/privateDnsZones',
        'Microsoft.Network/privateDnsZones/virtualNetworkLinks',
        'Microsoft.Network/privateEndpoints',
        'Microsoft.Network/privateEndpoints/privateDnsZoneGroups',
        'Microsoft.Network/networkSecurityGroups',
        'GitHub.Network/networkSettings',
        'Microsoft.Storage/storageAccounts',
        'Microsoft.Web/serverfarms',
        'Microsoft.Web/sites',
        'Microsoft.Authorization/roleAssignments',
        'Microsoft.Insights/scheduledQueryRules',
      ]),
    );
    const problems = all.flatMap(({ file: f, resource }) =>
      azureProblems(resource.typeWithVersion, resource.body, resource.existing).map((p) => `${f.name}: ${resource.symbol}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  test('the type check can fail: a wrong value, an unknown, a misspelt and a read-only property, a flag written as text', () => {
    expect(
      azureProblems('Microsoft.Storage/storageAccounts@2023-05-01', {
        name: 'st',
        location: 'x',
        kind: 'StorageV2',
        sku: { name: 'Standard_ZRS' },
        properties: { publicNetworkAccess: 'Disabled', networkAcls: { defaultAction: new Expr("isolated ? 'Block' : 'Allow'"), ipRule: [] } },
      }),
    ).toEqual(['properties.networkAcls.defaultAction: "Block" is none of "Allow", "Deny"', 'properties.networkAcls.ipRule: no such property']);
    expect(azureProblems('Microsoft.Storage/storageAccounts@2023-05-01', { name: 'st', location: 'x', sku: { name: 'Standard_ZRS' } })).toEqual([
      'kind: required',
    ]);
    expect(azureProblems('Microsoft.Web/serverfarms@2024-04-01', { name: 'p', location: 'x', properties: { zoneRedundancy: true, reserved: 'true' } })).toEqual(
      ['properties.zoneRedundancy: no such property', 'properties.reserved: a boolean is expected'],
    );
    expect(
      azureProblems('Microsoft.Network/privateEndpoints@2024-05-01', { name: 'pe', location: 'x', properties: { networkInterfaces: [], subnet: { id: 's' } } }),
    ).toEqual(['properties.networkInterfaces: read-only']);
    expect(azureProblems('Microsoft.Network/virtualNetworks@2025-01-01', { name: 'v' })).toEqual([
      'Microsoft.Network/virtualNetworks@2025-01-01 is not a published type in tests/fixtures/azure-resource-types',
    ]);
    // GitHub's beta script named the business organizationId, which 2024-04-02 no longer takes.
    expect(
      azureProblems('GitHub.Network/networkSettings@2024-04-02', {
        name: 'ghns',
        location: 'x',
        properties: { subnetId: 's', organizationId: '1', provisioningState: 'Succeeded' },
      }),
    ).toEqual(['properties.organizationId: no such property', 'properties.provisioningState: read-only']);
    expect(
      azureProblems('Microsoft.Network/networkSecurityGroups@2024-05-01', {
        name: 'nsg',
        properties: {
          securityRules: [
            { name: 'r', properties: { access: 'Allow', direction: 'Outbound', protocol: 'Tcp', priority: '200', destinationAddressPrefixs: 'Storage' } },
          ],
        },
      }),
    ).toEqual([
      'properties.securityRules[0].properties.priority: an integer is expected',
      'properties.securityRules[0].properties.destinationAddressPrefixs: no such property',
    ]);
  });

  test('prod is isolated with its storage closed, deployed by its runner group inside the network; dev stays open (docs/decisions/0095-prod-isolated-and-closed-written-through-private-networked.md); prod is zone redundant, dev is not', () => {
    expect(ENVIRONMENTS.map((env) => [env, envValue(env, 'networkIsolated'), envValue(env, 'storagePublicAccess'), envValue(env, 'zoneRedundant')])).toEqual([
      ['dev', false, true, false],
      ['prod', true, false, true],
    ]);
    expect(envValue('prod', 'storageSku')).toMatch(/^Standard_(ZRS|GZRS)$/);
    const pipeline = (env: string) => JSON.parse(readFileSync(join(INFRA, 'env', `${env}.pipeline.json`), 'utf8')) as { privateRunnerGroup?: unknown };
    expect(ENVIRONMENTS.map((env) => [env, pipeline(env).privateRunnerGroup])).toEqual([
      ['dev', ''],
      ['prod', 'drawreq-prod-network'],
    ]);
    // The organization's database id is prod's to fill in: a placeholder, refused by scripts/deploy.sh until then.
    expect(envValue('prod', 'githubBusinessId')).toMatch(/^REPLACE-WITH-/);
    expect(envValue('dev', 'githubBusinessId')).toBeUndefined();
  });

  /** The addresses of a CIDR block, as [first, last] 32-bit numbers. */
  const block = (cidr: string): [number, number] => {
    const [address, bits] = cidr.split('/');
    const first = address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
    return [first, first + 2 ** (32 - Number(bits)) - 1];
  };
  test("the subnets fit the network without overlapping: the app's /26 (Microsoft: one Flex Consumption app may use up to 40 addresses), the runners' /28, the endpoints' /27", () => {
    const defaults = Object.fromEntries(
      ['vnetAddressPrefix', 'appSubnetPrefix', 'runnerSubnetPrefix', 'endpointSubnetPrefix'].map((name) => [
        name,
        mainFile().params.get(name)?.defaultValue as string,
      ]),
    );
    expect(defaults).toEqual({
      vnetAddressPrefix: '10.40.0.0/23',
      appSubnetPrefix: '10.40.0.0/26',
      runnerSubnetPrefix: '10.40.0.64/28',
      endpointSubnetPrefix: '10.40.1.0/27',
    });
    const [low, high] = block(defaults.vnetAddressPrefix);
    const subnets = [defaults.appSubnetPrefix, defaults.runnerSubnetPrefix, defaults.endpointSubnetPrefix].map(block);
    for (const [first, last] of subnets) expect(first >= low && last <= high).toBe(true);
    for (const [i, a] of subnets.entries()) for (const b of subnets.slice(i + 1)) expect(a[1] < b[0] || b[1] < a[0]).toBe(true);
    // Each prefix is the start of its block (Azure refuses 10.40.0.70/28).
    for (const cidr of Object.values(defaults)) expect(block(cidr)[0] % 2 ** (32 - Number(cidr.split('/')[1]))).toBe(0);
    // "a single function app might use up to 40 IP addresses" (Flex Consumption how-to), and "Azure reserves
    // 5 IP addresses within each subnet" (Virtual Network FAQ): docs/decisions/0096-subnets-are-sized-once-app-26-runners-28-endpoints-27.md.
    const usable = (cidr: string) => block(cidr)[1] - block(cidr)[0] + 1 - 5;
    expect(usable(defaults.appSubnetPrefix)).toBeGreaterThanOrEqual(40);
    expect(mainModule('network').params).toMatchObject({ runnerSubnetPrefix: new Expr('runnerSubnetPrefix'), githubBusinessId: new Expr('githubBusinessId') });
  });

  test("GitHub's runners get their own subnet, delegated to GitHub.Network/networkSettings, and network settings naming it for the organization", () => {
    const settings = resourceOf(moduleFile('network'), 'GitHub.Network/networkSettings').body;
    expect(at(settings, 'properties')).toEqual({
      subnetId: new Expr("resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, runnerSubnetName)"),
      businessId: new Expr('githubBusinessId'),
    });
    // No tags of ours: a redeployment would replace the GitHubId tag GitHub's network configuration takes
    // (docs/decisions/0099-githubs-githubid-tag-is-left-to-github.md).
    expect(Object.keys(settings).sort()).toEqual(['location', 'name', 'properties']);
    expect(readFileSync(join(INFRA, 'modules', 'network.bicep'), 'utf8')).toContain(
      "resource runnerNetworkSettings 'GitHub.Network/networkSettings@2024-04-02' = if (!empty(githubBusinessId)) {",
    );
    expect(readFileSync(MAIN, 'utf8')).toContain("output runnerNetworkSettingsName string = networkIsolated ? network.outputs.runnerNetworkSettingsName : ''");
  });

  test('each subnet the network controls has its network security group: the app may reach the endpoints, Entra ID and Azure Monitor; nothing reaches the runners', () => {
    const network = moduleFile('network');
    const nsg = (symbol: string) => network.resources.find((r) => r.symbol === symbol)?.body;
    const rules = (symbol: string) =>
      (at(nsg(symbol), 'properties.securityRules') as ObjectValue[]).map((r) =>
        ['direction', 'access', 'destinationAddressPrefix', 'destinationPortRange']
          .map((key) => exprText(at(r, `properties.${key}`)).replace(/"/g, ''))
          .join(' '),
      );
    expect(rules('appNsg')).toEqual(['Outbound Allow VirtualNetwork 443', 'Outbound Allow AzureActiveDirectory 443', 'Outbound Allow AzureMonitor 443']);
    expect(rules('runnerNsg')).toEqual([
      'Outbound Allow VirtualNetwork 443',
      'Outbound Allow Storage 443',
      'Outbound Allow AzureActiveDirectory 443',
      'Outbound Allow AzureResourceManager 443',
      'Outbound Allow AppService 443',
      'Outbound Allow MicrosoftContainerRegistry 443',
      'Inbound Deny * *',
    ]);
    // Priorities unique within each group (Azure refuses a repeat).
    for (const symbol of ['appNsg', 'runnerNsg']) {
      const priorities = (at(nsg(symbol), 'properties.securityRules') as ObjectValue[]).map((r) => at(r, 'properties.priority'));
      expect(new Set(priorities).size).toBe(priorities.length);
    }
  });

  test('closed (isolated and storagePublicAccess false), the storage account answers only on private endpoints: public access off, no rule, nothing trusted', () => {
    const account = resourceOf(moduleFile('storage'), 'Microsoft.Storage/storageAccounts').body;
    expect(readFileSync(join(INFRA, 'modules', 'storage.bicep'), 'utf8')).toContain('var closed = networkIsolated && !publicAccess');
    expect(exprText(at(account, 'properties.publicNetworkAccess'))).toBe("closed ? 'Disabled' : 'Enabled'");
    expect(at(account, 'properties.networkAcls')).toEqual({
      defaultAction: new Expr("closed ? 'Deny' : 'Allow'"),
      bypass: new Expr("closed ? 'None' : 'AzureServices'"),
      ipRules: [],
      virtualNetworkRules: [],
    });
    expect(mainModule('storage').params.networkIsolated).toEqual(new Expr('networkIsolated'));
    expect(mainModule('storage').params.publicAccess).toEqual(new Expr('storagePublicAccess'));
    // Phase 1 by default: isolating an environment keeps storage public until a second deployment closes it.
    expect(readFileSync(MAIN, 'utf8')).toContain('param storagePublicAccess bool = true');
    expect(readFileSync(MAIN, 'utf8')).toContain('output storageClosed bool = networkIsolated && !storagePublicAccess');
  });

  test('a private endpoint, with its private DNS zone linked to the network, for blob and for table; nothing else', () => {
    expect(literalVar(mainFile(), 'storageServices')).toEqual(['blob', 'table']);
    const network = moduleFile('network');
    expect(exprText(resourceOf(network, 'Microsoft.Network/privateDnsZones').body.name)).toBe("'privatelink.${service}.${environment().suffixes.storage}'");
    expect(at(resourceOf(network, 'Microsoft.Network/privateDnsZones/virtualNetworkLinks').body, 'properties.virtualNetwork.id')).toEqual(new Expr('vnet.id'));
    const endpoints = moduleFile('storageEndpoints');
    const own = endpoints.resources.find((r) => r.symbol === 'endpoints');
    expect(at(own?.body, 'properties.privateLinkServiceConnections')).toEqual([
      {
        name: new Expr("'${storageAccountName}-${s.service}'"),
        properties: { privateLinkServiceId: new Expr('account.id'), groupIds: [new Expr('s.service')] },
      },
    ]);
    expect(at(endpoints.resources.find((r) => r.symbol === 'dnsGroups')?.body, 'properties.privateDnsZoneConfigs')).toEqual([
      { name: new Expr('s.service'), properties: { privateDnsZoneId: new Expr('s.zoneId') } },
    ]);
    for (const symbol of ['network', 'storageEndpoints'])
      expect(readFileSync(MAIN, 'utf8')).toContain(`module ${symbol} 'modules/${symbol}.bicep' = if (networkIsolated) {`);
  });

  test("the app's outbound traffic goes through a subnet delegated to Microsoft.App/environments, and it starts after the endpoints", () => {
    const vnet = resourceOf(moduleFile('network'), 'Microsoft.Network/virtualNetworks').body;
    const subnets = at(vnet, 'properties.subnets') as ObjectValue[];
    expect(subnets.map((s) => [s.name, at(s, 'properties.delegations'), at(s, 'properties.networkSecurityGroup')])).toEqual([
      [new Expr('appSubnetName'), [{ name: 'flex-consumption', properties: { serviceName: 'Microsoft.App/environments' } }], { id: new Expr('appNsg.id') }],
      // Its endpoints' network policies are off: a security group there would not be enforced.
      [new Expr('endpointSubnetName'), undefined, undefined],
      [
        new Expr('runnerSubnetName'),
        [{ name: 'github-hosted-runners', properties: { serviceName: 'GitHub.Network/networkSettings' } }],
        { id: new Expr('runnerNsg.id') },
      ],
    ]);
    // Outbound to Microsoft Entra ID, Application Insights and GitHub: explicit, so an API version whose default is false cannot cut it.
    expect(subnets.map((s) => at(s, 'properties.defaultOutboundAccess'))).toEqual([true, undefined, true]);
    expect(
      azureProblems('Microsoft.Network/virtualNetworks@2024-05-01', {
        name: 'v',
        properties: { subnets: [{ name: 's', properties: { defaultOutboundAccess: 'true' } }] },
      }),
    ).toEqual(['properties.subnets[0].properties.defaultOutboundAccess: a boolean is expected']);
    const site = resourceOf(moduleFile('functionApp'), 'Microsoft.Web/sites').body;
    expect(exprText(at(site, 'properties.virtualNetworkSubnetId'))).toBe('empty(subnetId) ? null : subnetId');
    expect(exprText(mainModule('functionApp').params.subnetId)).toBe("networkIsolated ? network.outputs.appSubnetId : ''");
    expect(mainModule('functionApp').body.dependsOn).toEqual([new Expr('roleAssignments'), new Expr('storageEndpoints')]);
  });

  test('the plan is zone redundant by parameter; Application Insights keeps public ingestion with local authentication off', () => {
    const plan = resourceOf(moduleFile('functionApp'), 'Microsoft.Web/serverfarms').body;
    expect(at(plan, 'properties.zoneRedundant')).toEqual(new Expr('zoneRedundant'));
    expect(mainModule('functionApp').params.zoneRedundant).toEqual(new Expr('zoneRedundant'));
    const component = resourceOf(moduleFile('monitoring'), 'Microsoft.Insights/components').body;
    expect([at(component, 'properties.DisableLocalAuth'), at(component, 'properties.publicNetworkAccessForIngestion')]).toEqual([true, 'Enabled']);
  });
});
