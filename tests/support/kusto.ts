/**
 * KQL checked by Microsoft's own Kusto language service (`@kusto/language-service-next`, the
 * Bridge.NET build of Kusto.Language): parse and semantic analysis against the Application Insights
 * schema of tests/support/appInsightsSchema.ts, or, for a query scoped to the Log Analytics workspace,
 * the workspace tables of tests/support/workspaceSchema.ts. Loading it takes about 0.4 s and 65 MB, and its first
 * analysis about 1 s: one test file uses it.
 */
import { APP_INSIGHTS_TABLES, COMMON_COLUMNS } from './appInsightsSchema';
import { WORKSPACE_TABLES } from './workspaceSchema';

/** Where a query runs: an Application Insights component (alerts, workbook, runbook) or its Log Analytics workspace. */
export type KqlScope = 'appInsights' | 'workspace';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- the library is untyped JavaScript that defines globals */
type Bridged = any;

export interface KqlDiagnostic {
  readonly severity: string;
  readonly code: string;
  readonly message: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

export interface KqlAnalysis {
  readonly diagnostics: KqlDiagnostic[];
  /**
   * Keys read from customDimensions and customMeasurements (null key: not a constant), with the table
   * whose column they read (undefined when the column is no table's own, as after a union).
   */
  readonly dynamicKeys: { table?: string; column: string; key: string | null }[];
}

const globalsByScope = new Map<KqlScope, Bridged>();
/** Each declared column symbol's table. */
const tableOfColumn = new Map<Bridged, string>();

function kusto(): Bridged {
  const g = globalThis as Bridged;
  if (g.Kusto?.Language === undefined) {
    // The runtime first: the library's main file expects the global `Bridge` it defines. Both only
    // define globals (no exports), so they are loaded for their effect.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@kusto/language-service-next/bridge.js');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@kusto/language-service-next');
  }
  return g.Kusto.Language;
}

/** The global state with the scope's database: Application Insights' tables with their common columns, or the workspace's tables as declared. */
function globalsFor(scope: KqlScope): Bridged {
  const known = globalsByScope.get(scope);
  if (known !== undefined) return known;
  const K = kusto();
  const S = K.Symbols;
  const tableSymbol = (table: string, specs: readonly string[]) => {
    const column = (spec: string) => {
      const [name, type = 'string'] = spec.split(':');
      const symbol = new S.ColumnSymbol(name, S.ScalarTypes.GetSymbol(type));
      tableOfColumn.set(symbol, table);
      return symbol;
    };
    return new S.TableSymbol.$ctor4(table, specs.map(column));
  };
  const tables =
    scope === 'appInsights'
      ? Object.entries(APP_INSIGHTS_TABLES).map(([table, own]) => tableSymbol(table, [COMMON_COLUMNS[0], ...own, ...COMMON_COLUMNS.slice(1)]))
      : Object.entries(WORKSPACE_TABLES).map(([table, columns]) => tableSymbol(table, columns));
  const globals = K.GlobalState.Default.WithDatabase(new S.DatabaseSymbol.ctor(scope === 'appInsights' ? 'appinsights' : 'workspace', tables));
  globalsByScope.set(scope, globals);
  return globals;
}

const kindName = (node: Bridged): string => (globalThis as Bridged).System.Enum.toString(kusto().Syntax.SyntaxKind, node.Kind);

function selectorKey(node: Bridged): string | null {
  const selector = node.Selector;
  if (kindName(node) === 'PathExpression') return selector.SimpleName || null;
  const inner = kindName(selector) === 'BracketedExpression' ? selector.Expression : selector;
  return inner.IsConstant && inner.ConstantValue != null ? String(inner.ConstantValue) : null;
}

/** Parses and analyses `query` where it runs; every diagnostic, and the dynamic keys it reads. */
export function analyseKql(query: string, scope: KqlScope = 'appInsights'): KqlAnalysis {
  const K = kusto();
  const code = K.KustoCode.ParseAndAnalyze(query, globalsFor(scope));
  const diagnostics = ((globalThis as Bridged).Bridge.toArray(code.GetDiagnostics()) as Bridged[]).map((d) => {
    const line = { v: 0 };
    const column = { v: 0 };
    code.TryGetLineAndOffset(d.Start, line, column);
    return {
      severity: String(d.Severity),
      code: String(d.Code),
      message: String(d.Message),
      line: line.v,
      column: column.v,
      text: query.substr(d.Start, d.Length),
    };
  });
  const dynamicKeys: { table?: string; column: string; key: string | null }[] = [];
  K.Syntax.SyntaxElement.WalkNodes(code.Syntax, (node: Bridged) => {
    const kind = kindName(node);
    if (kind !== 'PathExpression' && kind !== 'ElementExpression') return;
    if (kindName(node.Expression) !== 'NameReference') return;
    const symbol = node.Expression.ReferencedSymbol;
    if (symbol && ['customDimensions', 'customMeasurements'].includes(symbol.Name) && symbol instanceof K.Symbols.ColumnSymbol)
      dynamicKeys.push({ table: tableOfColumn.get(symbol), column: String(symbol.Name), key: selectorKey(node) });
  });
  return { diagnostics, dynamicKeys };
}

/**
 * A workbook query as the workbook runs it: its parameters replaced with what Workbooks expands them
 * to (`{TimeRange}` → `> ago(1d)`, `{TimeRange:grain}` → a bin size) and the given values.
 */
export function expandWorkbookParameters(query: string, values: Record<string, string>): string {
  const all: Record<string, string> = { TimeRange: '> ago(1d)', 'TimeRange:grain': '30m', ...values };
  return query.replace(/\{(\w+(?::\w+)?)\}/g, (whole, name: string) => {
    if (!(name in all)) throw new Error(`workbook parameter ${whole} has no value to check the query with`);
    return all[name];
  });
}
