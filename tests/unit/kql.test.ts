/**
 * Every KQL query on-call is given, checked by Microsoft's Kusto language service against the
 * Application Insights schema (tests/support/kusto.ts): the runbook's, the alert rules' as Bicep
 * composes them, and the workbook's as the workbook runs them. None may have an error or a warning,
 * and none may read a custom dimension or measurement the service does not write (lib/telemetry.ts
 * TELEMETRY_FIELDS). The ingestion budget alert, scoped to the Log Analytics workspace, is checked
 * against the workspace's tables (its `Usage`), where Application Insights' tables do not exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_NAME, TELEMETRY_FIELDS } from '../../lib/telemetry';
import { analyseKql, expandWorkbookParameters, type KqlScope } from '../support/kusto';

const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** A runbook query that opens with this comment runs in the Log Analytics workspace, not in Application Insights. */
const IN_WORKSPACE = '// In the Log Analytics workspace';

/** The runbook's ```kusto blocks, each with where it runs. */
function runbookQueries(): [string, string, KqlScope][] {
  return [...read('docs/runbook.md').matchAll(/```kusto\n([\s\S]*?)```/g)].map((m, i) => [
    `docs/runbook.md query ${i + 1}`,
    m[1],
    m[1].startsWith(IN_WORKSPACE) ? 'workspace' : 'appInsights',
  ]);
}

/** A single-quoted Bicep string's value (the alert queries use only \' escapes, if any). */
const bicepString = (text: string) => text.replace(/\\'/g, "'").replace(/\\\\/g, '\\');

/**
 * The alert rules' queries as the deployment composes them: `${invocations}` and `${eventName}` as
 * declared, `${alert.outcome}` and `${alert.matching}` once per rate alert, `${minimumFailures}` a value
 * its parameter allows.
 */
function alertQueries(): [string, string, KqlScope][] {
  const alerts = read('infra/modules/alerts.bicep');
  const eventName = /^var eventName = '([^']*)'$/m.exec(read('infra/main.bicep'))?.[1] as string;
  const invocations = bicepString(/^var invocations = '((?:[^'\\]|\\.)*)'$/m.exec(alerts)?.[1] as string);
  const outcomes = [...alerts.matchAll(/^\s+outcome: '(\w+)'$/gm)].map((m) => m[1]);
  const matchings = [...alerts.matchAll(/^\s+matching: '((?:[^'\\]|\\.)*)'$/gm)].map((m) => bicepString(m[1]));
  const queries: [string, string, KqlScope][] = [];
  for (const [, raw] of alerts.matchAll(/^\s+query: '((?:[^'\\]|\\.)*)'$/gm)) {
    const forEach = raw.includes('${alert.') ? outcomes : [undefined];
    for (const [i, outcome] of forEach.entries()) {
      const query = bicepString(raw)
        .replace(/\$\{invocations\}/g, invocations)
        .replace(/\$\{eventName\}/g, eventName)
        .replace(/\$\{alert\.outcome\}/g, outcome ?? '')
        .replace(/\$\{alert\.matching\}/g, matchings[i] ?? '')
        .replace(/\$\{minimumFailures\}/g, '3')
        .replace(/\$\{minimumSilentRequests\}/g, '3')
        .replace(/\$\{functionName\}/g, /^var functionName = '(\w+)'$/m.exec(alerts)?.[1] as string);
      if (query.includes('${')) throw new Error(`an interpolation this test does not compose: ${query}`);
      queries.push([`alert query${outcome === undefined ? '' : ` (${outcome})`}`, query, 'appInsights']);
    }
  }
  return queries;
}

interface WorkbookItem {
  readonly type: number;
  readonly name: string;
  readonly content: { readonly query?: string; readonly title?: string };
}

/** The workbook's query items, their parameters expanded as the workbook does. */
function workbookQueries(): [string, string, KqlScope][] {
  const workbook = JSON.parse(read('infra/workbook.json')) as { items: WorkbookItem[] };
  return workbook.items
    .filter((item) => item.type === 3)
    .map((item) => [
      `workbook tile ${item.name}`,
      expandWorkbookParameters(item.content.query as string, { RequestId: '0b7c5e4e-3f3a-4d8e-9a1e-5f1c2d3e4f50', LoanNumber: '1001' }),
      'appInsights',
    ]);
}

const QUERIES = [...runbookQueries(), ...alertQueries(), ...workbookQueries()];

/** The ingestion budget alert's query as the deployment composes it, with a budget its parameter allows. */
function budgetQuery(): string {
  const budget = read('infra/modules/ingestionBudget.bicep');
  const [raw, ...more] = [...budget.matchAll(/^\s+query: '((?:[^'\\]|\\.)*)'$/gm)].map((m) => m[1]);
  if (raw === undefined || more.length > 0) throw new Error('ingestionBudget.bicep: expected one query');
  const query = bicepString(raw).replace(/\$\{dailyBudgetGb\}/g, '5');
  if (query.includes('${')) throw new Error(`an interpolation this test does not compose: ${query}`);
  return query;
}
const { eventDimensions, eventMeasurements, dataQualityDimensions, dependencyDimensions } = TELEMETRY_FIELDS;
/** What the service writes, by table: its event in customEvents, its data-quality traces in traces, its storage rounds and failed calls in dependencies. */
const WRITTEN: Record<string, { customDimensions: ReadonlySet<string>; customMeasurements: ReadonlySet<string> }> = {
  customEvents: { customDimensions: new Set(eventDimensions), customMeasurements: new Set(eventMeasurements) },
  traces: { customDimensions: new Set(dataQualityDimensions), customMeasurements: new Set() },
  dependencies: { customDimensions: new Set(dependencyDimensions), customMeasurements: new Set() },
};
/** A column that is no single table's (after a union): any name the service writes. */
const WRITTEN_ANYWHERE = {
  customDimensions: new Set<string>([...eventDimensions, ...dataQualityDimensions, ...dependencyDimensions]),
  customMeasurements: new Set<string>(eventMeasurements),
};

/** Errors and warnings, as `line:column CODE message`. */
const problemsOf = (query: string, scope: KqlScope = 'appInsights') =>
  analyseKql(query, scope)
    .diagnostics.filter((d) => d.severity === 'Error' || d.severity === 'Warning')
    .map((d) => `${d.line}:${d.column} ${d.severity} ${d.code} ${d.message}`);

/** Custom dimensions and measurements read that the service does not write in that table. */
const unwrittenKeysOf = (query: string, scope: KqlScope = 'appInsights') =>
  analyseKql(query, scope)
    .dynamicKeys.filter(({ table, column, key }) => {
      const written = table === undefined ? WRITTEN_ANYWHERE : WRITTEN[table];
      return key === null || written?.[column as keyof typeof WRITTEN_ANYWHERE].has(key) !== true;
    })
    .map(({ table, column, key }) => `${table ?? '?'}.${column}.${key}`);

test('the queries are all found: runbook, alert rules and workbook', () => {
  const count = (prefix: string) => QUERIES.filter(([name]) => name.startsWith(prefix)).length;
  // The runbook keeps only the queries no workbook tile answers (docs/decisions/0138-the-runbook-does-not-repeat-the-workbooks-queries.md).
  expect(count('docs/runbook.md')).toBeGreaterThanOrEqual(5);
  expect(count('alert query')).toBe(5); // the 500 and 502 rates, the 401 spike, a commit's outcome unknown, telemetry silence
  expect(count('workbook tile')).toBeGreaterThanOrEqual(10);
  // The runbook's Usage query (Ingestion past its budget) is the workspace's; the rest are Application Insights'.
  expect(QUERIES.filter(([, , scope]) => scope === 'workspace').map(([, query]) => query.split('\n')[1])).toEqual(['Usage']);
  expect(alertQueries().every(([, q]) => q.includes(`name == "${EVENT_NAME}"`))).toBe(true);
}, 30_000);

test.each(QUERIES)('%s: no error or warning from the Kusto language service', (_name, query, scope) => {
  expect(problemsOf(query, scope)).toEqual([]);
});

test.each(QUERIES)('%s: reads only custom dimensions and measurements the service writes', (_name, query, scope) => {
  expect(unwrittenKeysOf(query, scope)).toEqual([]);
});

describe("the ingestion budget alert (issue #32): the workspace's Usage table", () => {
  test('its query has no error or warning where it runs, the Log Analytics workspace', () => {
    expect(budgetQuery()).toMatch(/^Usage \| where IsBillable \|/);
    expect(problemsOf(budgetQuery(), 'workspace')).toEqual([]);
  });

  test('it could not run against Application Insights, nor an App Insights query against the workspace (the scopes are told apart)', () => {
    expect(problemsOf(budgetQuery())).toEqual([expect.stringContaining("'Usage'")]);
    expect(problemsOf('customEvents | take 1', 'workspace')).toEqual([expect.stringContaining("'customEvents'")]);
  });

  test('a column the Usage table does not have, or one the summary no longer has, is reported', () => {
    expect(problemsOf('Usage | where IsBillable | summarize sum(QuantityMB)', 'workspace')).toEqual([expect.stringContaining("'QuantityMB'")]);
    expect(problemsOf('Usage | summarize gb = sum(Quantity) / 1000.0 | where Quantity > 0', 'workspace')).toEqual([expect.stringContaining("'Quantity'")]);
  });
});

describe('the checks can fail', () => {
  test("a column named with a keyword unbracketed (the runbook's data-quality query as it was)", () => {
    expect(problemsOf('traces | summarize count(), last = max(timestamp) by issue = tostring(customDimensions.issue)')).toEqual([
      expect.stringContaining("The name 'last' needs to be bracketed as ['last']"),
    ]);
  });

  test('a column no table has, a table Application Insights does not have', () => {
    expect(problemsOf('customEvents | where severityLevel > 1')).toEqual([expect.stringContaining("'severityLevel' does not refer to any known column")]);
    expect(problemsOf('AppEvents | take 1')).toEqual([expect.stringContaining('AppEvents')]);
  });

  test('a custom dimension the service does not write', () => {
    expect(unwrittenKeysOf('customEvents | where tostring(customDimensions.outcome) == "Accepted" and tostring(customDimensions["loan"]) == "1"')).toEqual([
      'customEvents.customDimensions.loan',
    ]);
    expect(unwrittenKeysOf('customEvents | extend x = todouble(customMeasurements.latencyMs)')).toEqual(['customEvents.customMeasurements.latencyMs']);
  });

  test('a dimension the service writes, read from a table it does not write it in', () => {
    expect(unwrittenKeysOf('customEvents | where tostring(customDimensions.code) == "InvalidAmount"')).toEqual(['customEvents.customDimensions.code']);
    expect(unwrittenKeysOf('dependencies | where tostring(customDimensions.requestId) == "x"')).toEqual(['dependencies.customDimensions.requestId']);
    expect(unwrittenKeysOf('traces | where tostring(customDimensions.loanNumbers) == "1" | extend o = tostring(customDimensions.outcome)')).toEqual([
      'traces.customDimensions.outcome',
    ]);
    // The element traces are gone: their dimensions are read from the event's rejectedElements now.
    expect(unwrittenKeysOf('traces | where tostring(customDimensions.code) == "InvalidAmount"')).toEqual(['traces.customDimensions.code']);
  });
});
