/**
 * Evaluates the part of a Bicep deployment the tests need to know as values, not as source text: which
 * federated credentials the bootstrap gives each pipeline identity for given parameters, which role each
 * role assignment of a module grants on which resource, and the function app's always-ready groups for an
 * environment's parameters (or the template's `fail()`). No Bicep
 * compiler can be installed here, so the files are parsed with the tree-sitter Bicep grammar (as
 * tests/unit/infra.test.ts parses them) and the expressions are evaluated from that tree with ARM's
 * semantics for the few constructs these files use. Anything else throws, naming the construct: an
 * expression the evaluator does not know fails a test rather than evaluating to something plausible.
 */
import { readFileSync } from 'node:fs';
import Parser from 'web-tree-sitter';

type SyntaxNode = Parser.SyntaxNode;

export type Value = string | number | boolean | null | Value[] | { [key: string]: Value } | ResourceRef;

/** A reference to a resource symbol: its evaluated name, enough for `parent:` and `.name`. */
export class ResourceRef {
  constructor(
    readonly symbol: string,
    readonly name: string,
  ) {}
}

/** A parameter's value, or how to compute it (a module's parameters, evaluated only if read). */
export type Given = Value | (() => Value);

/** One resource instance as ARM would deploy it: a loop yields one per element, a false condition none. */
export interface EvaluatedResource {
  readonly symbol: string;
  readonly type: string;
  readonly body: { [key: string]: Value };
}

const GRAMMAR = require.resolve('tree-sitter-bicep/tree-sitter-bicep.wasm');
let parser: Parser | undefined;

/** The tree-sitter parser with the Bicep grammar (loaded once). */
export async function bicepParser(): Promise<Parser> {
  if (parser === undefined) {
    await Parser.init();
    const language = await Parser.Language.load(readFileSync(GRAMMAR));
    parser = new Parser();
    parser.setLanguage(language);
  }
  return parser;
}

/** tree-sitter-bicep 1.1.0 predates `extension <alias>`: the statement is blanked, positions kept. */
const EXTENSION_STATEMENT = /^extension[ \t]+[A-Za-z_][A-Za-z0-9_]*(?=[ \t]*$)/gm;

const named = (node: SyntaxNode): SyntaxNode[] => node.namedChildren.filter((c) => c.type !== 'comment' && c.type !== 'diagnostic_comment');

const ESCAPES: Record<string, string> = { '\\\\': '\\', "\\'": "'", '\\n': '\n', '\\r': '\r', '\\t': '\t', '\\$': '$' };

class Unsupported extends Error {
  constructor(what: string, node: SyntaxNode) {
    super(`${what} at ${node.startPosition.row + 1}:${node.startPosition.column + 1}: ${node.text.slice(0, 80)}`);
  }
}

/** A deployment the template itself refuses: its `fail()` was reached, with this message. */
export class DeploymentRefused extends Error {}

/** A Bicep file's declarations, evaluated lazily (a parameter or variable only when something reads it). */
export class BicepFile {
  private readonly params = new Map<string, SyntaxNode>();
  private readonly vars = new Map<string, SyntaxNode>();
  private readonly resources = new Map<string, SyntaxNode>();
  private readonly modules = new Map<string, SyntaxNode>();
  private readonly cache = new Map<string, Value>();

  constructor(
    readonly path: string,
    root: SyntaxNode,
    private readonly given: Record<string, Given>,
  ) {
    for (const node of named(root)) {
      const symbol = named(node)[0]?.text;
      if (node.type === 'parameter_declaration') this.params.set(symbol, node);
      if (node.type === 'variable_declaration') this.vars.set(symbol, node);
      if (node.type === 'resource_declaration') this.resources.set(symbol, node);
      if (node.type === 'module_declaration') this.modules.set(symbol, node);
    }
    const unknown = Object.keys(given).filter((name) => !this.params.has(name));
    if (unknown.length > 0) throw new Error(`${path}: no parameter ${unknown.join(', ')}`);
  }

  static async load(path: string, params: Record<string, Given>): Promise<BicepFile> {
    const source = readFileSync(path, 'utf8').replace(EXTENSION_STATEMENT, (statement) => ' '.repeat(statement.length));
    return new BicepFile(path, (await bicepParser()).parse(source).rootNode, params);
  }

  /** A parameter's value: the one given, else its default; ARM refuses a value outside `@allowed`. */
  param(name: string): Value {
    const node = this.params.get(name);
    if (node === undefined) throw new Error(`${this.path}: no parameter ${name}`);
    return this.memo(`param ${name}`, () => {
      const rest = named(node).slice(2);
      let value: Value;
      const given = this.given[name];
      if (typeof given === 'function') value = given();
      else if (name in this.given) value = given;
      else if (rest.length > 0) value = this.evaluate(rest[0], new Map());
      else throw new Error(`${this.path}: parameter ${name} has no default and was not given`);
      const allowed = this.decorator(node, 'allowed');
      if (allowed !== undefined) {
        const list = this.evaluate(allowed[0], new Map()) as Value[];
        if (!list.some((a) => JSON.stringify(a) === JSON.stringify(value)))
          throw new Error(`${this.path}: ${name} = ${JSON.stringify(value)} is not one of ${JSON.stringify(list)}`);
      }
      const minLength = this.decorator(node, 'minLength');
      if (minLength !== undefined && typeof value === 'string' && value.length < (this.evaluate(minLength[0], new Map()) as number))
        throw new Error(`${this.path}: ${name} is shorter than @minLength`);
      return value;
    });
  }

  /** A variable's value. */
  variable(name: string): Value {
    const variable = this.vars.get(name);
    if (variable === undefined) throw new Error(`${this.path}: no variable ${name}`);
    return this.memo(`var ${name}`, () => this.evaluate(named(variable)[1], new Map()));
  }

  /** The parameters a module call passes, evaluated in this file. */
  moduleParams(symbol: string): Record<string, () => Value> {
    const node = this.modules.get(symbol);
    if (node === undefined) throw new Error(`${this.path}: no module ${symbol}`);
    const body = named(node).find((c) => c.type === 'object');
    if (body === undefined) throw new Unsupported('a conditional or looped module', node);
    const params = named(body)
      .map((p) => named(p))
      .find(([key]) => key.text === 'params');
    if (params === undefined) return {};
    return Object.fromEntries(named(params[1]).map((p) => [named(p)[0].text, () => this.evaluate(named(p)[1], new Map())]));
  }

  /** The symbols of the resources of `type` the file declares (not `existing` ones), in file order. */
  declared(type: string): string[] {
    return [...this.resources.entries()]
      .filter(([, node]) => !node.children.some((c) => c.type === 'existing'))
      .filter(([, node]) => this.typeText(node) === type)
      .map(([symbol]) => symbol);
  }

  /** A resource's type, without its API version. */
  typeOf(symbol: string): string {
    const node = this.resources.get(symbol);
    if (node === undefined) throw new Error(`${this.path}: no resource ${symbol}`);
    return this.typeText(node);
  }

  /** A resource declaration's type string, without its API version. */
  private typeText(node: SyntaxNode): string {
    const type = this.evaluate(named(node)[1], new Map());
    if (typeof type !== 'string') throw new Unsupported('a resource type that is not a string', node);
    return type.split('@')[0];
  }

  /**
   * One property of a resource's body (`properties.roleDefinitionId`, `scope`), evaluated alone: the rest
   * of the body (a name made with guid(), say) is not evaluated. Only for a resource without a loop.
   */
  property(symbol: string, path: string): Value {
    const node = this.propertyNode(symbol, path);
    if (node === undefined) throw new Error(`${this.path}: ${symbol} has no ${path}`);
    return this.evaluate(node, new Map());
  }

  /** The source text of one property of a resource's body (`deploy.properties.principalId`), undefined when it has none. */
  propertyText(symbol: string, path: string): string | undefined {
    return this.propertyNode(symbol, path)?.text;
  }

  private propertyNode(symbol: string, path: string): SyntaxNode | undefined {
    const node = this.resources.get(symbol);
    if (node === undefined) throw new Error(`${this.path}: no resource ${symbol}`);
    let value: SyntaxNode | undefined = named(node).find((c) => c.type === 'object' || c.type === 'if_statement');
    if (value?.type === 'if_statement') value = named(value).at(-1);
    if (value === undefined || value.type !== 'object') throw new Unsupported('a looped resource', node);
    for (const key of path.split('.')) {
      const property: SyntaxNode | undefined = named(value).find((p) => p.type === 'object_property' && named(p)[0]?.text === key);
      if (property === undefined) return undefined;
      value = named(property)[1];
    }
    return value;
  }

  /** Every instance of the resources of `type` the file declares (not `existing` ones). */
  resourcesOf(type: string): EvaluatedResource[] {
    return [...this.resources.entries()].flatMap(([symbol, node]) => {
      const typeWithVersion = this.evaluate(named(node)[1], new Map());
      if (typeof typeWithVersion !== 'string' || typeWithVersion.split('@')[0] !== type) return [];
      if (node.children.some((c) => c.type === 'existing')) return [];
      return this.instances(node, new Map()).map((body) => ({ symbol, type, body }));
    });
  }

  private instances(node: SyntaxNode, scope: Map<string, Value>): Array<{ [key: string]: Value }> {
    const value = named(node).find((c) => ['object', 'if_statement', 'for_statement'].includes(c.type));
    if (value === undefined) throw new Unsupported('a resource without a body', node);
    if (value.type === 'object') return [this.evaluate(value, scope) as { [key: string]: Value }];
    if (value.type === 'if_statement') {
      const [condition, body] = named(value);
      return this.evaluate(condition, scope) === true ? [this.evaluate(body, scope) as { [key: string]: Value }] : [];
    }
    return (this.evaluate(value, scope) as Value[]).filter((v): v is { [key: string]: Value } => v !== null && typeof v === 'object');
  }

  private decorator(declaration: SyntaxNode, name: string): SyntaxNode[] | undefined {
    let previous = declaration.previousNamedSibling;
    while (previous !== null && previous.type === 'comment') previous = previous.previousNamedSibling;
    if (previous === null || previous.type !== 'decorators') return undefined;
    for (const decorator of named(previous)) {
      const call = named(decorator)[0];
      if (call?.childForFieldName('function')?.text !== name) continue;
      const args = call.childForFieldName('arguments');
      return args === null ? [] : named(args);
    }
    return undefined;
  }

  private memo(key: string, compute: () => Value): Value {
    if (!this.cache.has(key)) this.cache.set(key, compute());
    return this.cache.get(key) as Value;
  }

  private lookup(name: string, node: SyntaxNode, scope: Map<string, Value>): Value {
    if (scope.has(name)) return scope.get(name) as Value;
    if (this.params.has(name)) return this.param(name);
    if (this.vars.has(name)) return this.variable(name);
    const resource = this.resources.get(name);
    if (resource !== undefined) {
      // Only the name: the rest of a resource (its location, its properties) is not needed to refer to it.
      const body = named(resource).find((c) => c.type === 'object');
      const property = body === undefined ? undefined : named(body).find((p) => named(p)[0]?.text === 'name');
      if (property === undefined) throw new Unsupported('a reference to a conditional or looped resource', node);
      const value = this.evaluate(named(property)[1], new Map());
      if (typeof value !== 'string') throw new Unsupported('a resource name that is not a string', node);
      return new ResourceRef(name, value);
    }
    throw new Unsupported(`an unknown identifier ${name}`, node);
  }

  /** ARM's value of an expression node. */
  evaluate(node: SyntaxNode, scope: Map<string, Value>): Value {
    switch (node.type) {
      case 'string':
        return named(node)
          .map((part) => {
            if (part.type === 'escape_sequence') return ESCAPES[part.text] ?? part.text;
            if (part.type !== 'interpolation') return part.text;
            const inner = this.evaluate(named(part)[0], scope);
            if (typeof inner === 'string') return inner;
            if (typeof inner === 'number') return String(inner);
            throw new Unsupported('an interpolation of something other than a string or a number', part);
          })
          .join('');
      case 'number':
        return Number(node.text);
      case 'boolean':
        return node.text === 'true';
      case 'null':
        return null;
      case 'array':
        return named(node)
          .filter((c) => c.type !== 'decorators')
          .map((c) => this.evaluate(c, scope));
      case 'object': {
        const object: { [key: string]: Value } = {};
        for (const property of named(node)) {
          if (property.type === 'decorators') continue;
          const [key, value] = named(property);
          if (key.type === 'resource_declaration') throw new Unsupported('a nested child resource', property);
          const name = key.type === 'string' ? this.evaluate(key, scope) : key.text;
          if (typeof name !== 'string') throw new Unsupported('a key that is not a string', key);
          object[name] = this.evaluate(value, scope);
        }
        return object;
      }
      case 'identifier':
        return this.lookup(node.text, node, scope);
      case 'parenthesized_expression': {
        const inner = named(node);
        if (inner.length !== 1) throw new Unsupported('a parenthesized list', node);
        return this.evaluate(inner[0], scope);
      }
      case 'member_expression': {
        const object = this.evaluate(node.childForFieldName('object') as SyntaxNode, scope);
        const property = node.childForFieldName('property')?.text ?? '';
        if (object instanceof ResourceRef) {
          if (property === 'name') return object.name;
          throw new Unsupported(`a resource's ${property} (known only once deployed)`, node);
        }
        return this.member(object, property, node);
      }
      case 'subscript_expression': {
        const object = this.evaluate(node.childForFieldName('object') as SyntaxNode, scope);
        const index = this.evaluate(node.childForFieldName('index') as SyntaxNode, scope);
        if (Array.isArray(object) && typeof index === 'number') {
          if (index < 0 || index >= object.length) throw new Unsupported(`index ${index} out of bounds`, node);
          return object[index];
        }
        if (typeof index === 'string') return this.member(object, index, node);
        throw new Unsupported('an index of this kind', node);
      }
      case 'ternary_expression': {
        const condition = this.evaluate(node.childForFieldName('condition') as SyntaxNode, scope);
        if (typeof condition !== 'boolean') throw new Unsupported('a condition that is not a bool', node);
        return this.evaluate(node.childForFieldName(condition ? 'consequence' : 'alternative') as SyntaxNode, scope);
      }
      case 'binary_expression': {
        const operator = node.childForFieldName('operator')?.text;
        const left = this.evaluate(node.childForFieldName('left') as SyntaxNode, scope);
        const right = () => this.evaluate(node.childForFieldName('right') as SyntaxNode, scope);
        if (operator === '==') return JSON.stringify(left) === JSON.stringify(right());
        if (operator === '!=') return JSON.stringify(left) !== JSON.stringify(right());
        if (operator === '&&') return left === true && right() === true;
        if (operator === '||') return left === true || right() === true;
        if (['<', '<=', '>', '>='].includes(operator ?? '')) {
          const [a, b] = [left, right()];
          if (typeof a !== 'number' || typeof b !== 'number') throw new Unsupported(`${operator} of something other than numbers`, node);
          return operator === '<' ? a < b : operator === '<=' ? a <= b : operator === '>' ? a > b : a >= b;
        }
        throw new Unsupported(`the operator ${operator}`, node);
      }
      case 'unary_expression': {
        const argument = this.evaluate(node.childForFieldName('argument') as SyntaxNode, scope);
        if (node.childForFieldName('operator')?.text === '!' && typeof argument === 'boolean') return !argument;
        throw new Unsupported('this unary expression', node);
      }
      case 'for_statement':
        return this.loop(node, scope);
      case 'call_expression':
        return this.call(node, scope);
      default:
        throw new Unsupported(`a ${node.type}`, node);
    }
  }

  private member(object: Value, property: string, node: SyntaxNode): Value {
    if (object === null || typeof object !== 'object' || Array.isArray(object) || object instanceof ResourceRef || !(property in object))
      throw new Unsupported(`no property ${property}`, node);
    return object[property];
  }

  private loop(node: SyntaxNode, scope: Map<string, Value>): Value[] {
    const variable = node.childForFieldName('initializer');
    const body = node.childForFieldName('body');
    if (variable === null || body === null) throw new Unsupported('a loop with an index variable', node);
    const source = named(node).find((c) => c.id !== variable.id && c.id !== body.id);
    const items = source === undefined ? undefined : this.evaluate(source, scope);
    if (!Array.isArray(items)) throw new Unsupported('a loop over something other than an array', node);
    return items.flatMap((item) => {
      const inner = new Map(scope).set(variable.text, item);
      if (body.type !== 'if_statement') return [this.evaluate(body, inner)];
      const [condition, object] = named(body);
      return this.evaluate(condition, inner) === true ? [this.evaluate(object, inner)] : [];
    });
  }

  /** The ARM template functions these files use, with ARM's behaviour on bad input. */
  private call(node: SyntaxNode, scope: Map<string, Value>): Value {
    const name = node.childForFieldName('function')?.text ?? '';
    const args = named(node.childForFieldName('arguments') as SyntaxNode).map((a) => this.evaluate(a, scope));
    const strings = () => {
      if (!args.every((a): a is string => typeof a === 'string')) throw new Unsupported(`${name} of something other than strings`, node);
      return args;
    };
    switch (name) {
      case 'split': {
        const [text, delimiter] = strings();
        return text.split(delimiter);
      }
      case 'int': {
        // ARM's int() refuses text that is not a whole number: a deployment given a name fails.
        const [value] = args;
        if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
        if (typeof value === 'string' && /^[+-]?\d+$/.test(value.trim()) && Number.isSafeInteger(Number(value))) return Number(value);
        throw new Unsupported(`int(${JSON.stringify(value)}): not a whole number`, node);
      }
      case 'string': {
        const [value] = args;
        if (typeof value === 'string') return value;
        if (typeof value === 'number') return String(value);
        throw new Unsupported('string() of something other than a string or a number', node);
      }
      case 'concat':
        if (args.every((a) => Array.isArray(a))) return (args as Value[][]).flat(1);
        return strings().join('');
      case 'toLower':
        return strings()[0].toLowerCase();
      case 'fail':
        // Bicep's fail(message): the deployment stops with the message (reached only where a condition chose it).
        throw new DeploymentRefused(strings()[0]);
      case 'subscriptionResourceId': {
        // The subscription is the deployment's; only the type and name are the template's.
        const [type, name] = strings();
        return `/subscriptions/<subscription id>/providers/${type}/${name}`;
      }
      case 'length': {
        const [value] = args;
        if (typeof value === 'string' || Array.isArray(value)) return value.length;
        throw new Unsupported('length() of this', node);
      }
      default:
        throw new Unsupported(`the function ${name}()`, node);
    }
  }
}
