/**
 * docs/runbook.md against what it names (issue #33): the alerts it starts from are the ones infra/
 * declares, the tiles it sends on-call to are the workbook's, the access it lists is what
 * infra/modules/onCallAccess.bicep grants, and every log line it (or docs/deploy.md) quotes is one the
 * code prints. (tests/unit/kql.test.ts checks its queries; tests/unit/infra.test.ts the grants themselves.)
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../lib/config';
import { rolesNamed } from '../support/builtInRoles';
import { tableRows } from '../support/markdown';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const RUNBOOK = read('docs/runbook.md');

/** The text under a `## ` or `### ` heading, to the next heading of its level or above. */
function section(heading: string): string {
  const start = RUNBOOK.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/runbook.md has no heading "${heading}"`);
  const level = heading.split(' ')[0];
  const rest = RUNBOOK.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{2,${level.length}} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

describe('Paged? Start here', () => {
  /** Every alert rule and web test infra/ declares, by the name after `<app>-<env>-`. */
  function declaredAlerts(): string[] {
    const alerts = read('infra/modules/alerts.bicep');
    const rates = /^var rateAlerts = \[([^]*?)^\]/m.exec(alerts)?.[1] ?? '';
    return [
      ...new Set([
        ...[...rates.matchAll(/^\s+name: '([\w-]+)'$/gm)].map((m) => m[1]),
        ...[...alerts.matchAll(/name: '\$\{namePrefix\}-([\w-]+)'/g)].map((m) => m[1]),
        ...[...read('infra/main.bicep').matchAll(/name: '\$\{baseName\}-([\w-]+)'\n\s+location/g)].map((m) => m[1]),
      ]),
    ].sort();
  }

  test('is the first section: where on-call starts', () => {
    expect(RUNBOOK.split('\n').find((l) => l.startsWith('## '))).toBe('## Paged? Start here');
  });

  test("has a row for every alert infra/ declares, on-call's and the platform team's, with each column filled", () => {
    expect(declaredAlerts()).toEqual([
      'availability',
      'commit-outcome-unknown',
      'ingestion-budget',
      'status-401-spike',
      'status-500-rate',
      'status-502-rate',
      'telemetry-silent',
    ]);
    const rows = tableRows(section('## Paged? Start here'), /^\| Alert \| Sev\. \| Open first \| Mitigate \| Escalate to \| Access it needs \|$/);
    expect(rows.map((r) => /^`([\w-]+)`$/.exec(r[0])?.[1]).sort()).toEqual(declaredAlerts());
    for (const row of rows)
      expect({ alert: row[0], empty: row.filter((c) => c === '').length, cells: row.length }).toEqual({ alert: row[0], empty: 0, cells: 6 });
  });

  test("each row's severity is the alert's", () => {
    const rows = tableRows(section('## Paged? Start here'), /^\| Alert \| Sev\. \|/);
    const severities = Object.fromEntries(rows.map((r) => [r[0].replace(/`/g, ''), Number(r[1])]));
    const alerts = read('infra/modules/alerts.bicep');
    expect(severities).toEqual({
      'status-500-rate': Number(/name: 'status-500-rate'[^]*?severity: (\d)/.exec(alerts)?.[1]),
      'status-502-rate': Number(/name: 'status-502-rate'[^]*?severity: (\d)/.exec(alerts)?.[1]),
      'commit-outcome-unknown': Number(/-commit-outcome-unknown'[^]*?severity: (\d)/.exec(alerts)?.[1]),
      'status-401-spike': Number(/-status-401-spike'[^]*?severity: (\d)/.exec(alerts)?.[1]),
      'telemetry-silent': Number(/-telemetry-silent'[^]*?severity: (\d)/.exec(alerts)?.[1]),
      availability: Number(/resource availability 'Microsoft\.Insights\/metricAlerts[^]*?severity: (\d)/.exec(alerts)?.[1]),
      'ingestion-budget': Number(/severity: (\d)/.exec(read('infra/modules/ingestionBudget.bicep'))?.[1]),
    });
  });
});

describe('the workbook tiles the runbook sends on-call to exist', () => {
  const titles = (JSON.parse(read('infra/workbook.json')) as { items: { type: number; content: { title?: string } }[] }).items
    .filter((i) => i.type === 3)
    .map((i) => String(i.content.title));
  /** How a tile is named in prose: its title up to the first comma, colon or parenthesis. */
  const short = (title: string) => title.split(/[,:(]/)[0].trim();

  test("the tiles table lists every tile of infra/workbook.json, once, in the workbook's order", () => {
    const rows = tableRows(section('## The workbook: look first'), /^\| tile \| answers \| what to do about it \|$/);
    expect(rows.length).toBe(titles.length);
    rows.forEach((row, i) =>
      expect({ row: row[0], tile: short(titles[i]) }).toEqual({
        row: expect.stringMatching(new RegExp(`^${short(titles[i]).replace(/[()]/g, '\\$&')}`)),
        tile: short(titles[i]),
      }),
    );
    expect(titles.map(short)).toContain('Telemetry silence');
  });

  test('every "tile *…*" the runbook names is the start of a tile\'s title', () => {
    const named = [...RUNBOOK.matchAll(/tile \*([^*]+)\*/g)].map((m) => m[1].replace(/\s+/g, ' '));
    expect(named.length).toBeGreaterThanOrEqual(8);
    expect(named.filter((n) => !titles.some((t) => t.startsWith(n)))).toEqual([]);
  });
});

describe('the access the runbook lists is what infra/ grants the on-call group', () => {
  const ROLE_NAMES = rolesNamed('Workbook Reader', 'Monitoring Reader', 'Log Analytics Reader', 'Storage Table Data Reader', 'Storage Table Data Contributor');

  test('each role onCallAccess.bicep assigns is a row of "Your access", and no row names a role it does not assign', () => {
    const module = read('infra/modules/onCallAccess.bicep');
    const ids = Object.fromEntries([...module.matchAll(/^var (\w+) = '([0-9a-f-]{36})'$/gm)].map((m) => [m[1], m[2]]));
    const granted = [...module.matchAll(/roleDefinitions', (\w+)\)/g)].map((m) => ROLE_NAMES[ids[m[1]]] ?? `unknown role ${m[1]}`).sort();
    expect(granted).toHaveLength(6);
    const rows = tableRows(section('### Your access'), /^\| To \| Role \| On \|$/);
    const listed = rows.filter((r) => Object.values(ROLE_NAMES).includes(r[1])).map((r) => r[1]);
    expect(listed.sort()).toEqual(granted);
    // What on-call is not given is said, with whom to ask: rollback is GitHub's, a restart the platform team's.
    expect(rows.map((r) => r[2])).toEqual(expect.arrayContaining([expect.stringContaining('GitHub, not Azure'), expect.stringContaining("not on-call's")]));
  });
});

describe('every log line the runbook and docs/deploy.md quote is one the code prints', () => {
  function walk(dir: string): string[] {
    return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
    );
  }
  /** A ConfigError's message up to its first problem, as `${error.message}` prints it (lib/config.ts). */
  const CONFIG_MESSAGE = new ConfigError(['\u0000']).message.split('\u0000')[0];

  /** What each string of these files surely prints: its text up to the first interpolation left, a ConfigError's message expanded. */
  function printedStarts(files: readonly string[]): string[] {
    return files.flatMap((f) =>
      [...read(f).matchAll(/`([^`]*)`|'((?:[^'\\\n]|\\.)*)'/g)].map(
        (m) => (m[1] ?? m[2]).replace(/\$\{(?:error|telemetry)\.message\}/g, CONFIG_MESSAGE).split('${')[0],
      ),
    );
  }
  const CODE = ['lib', 'functions'].flatMap(walk);

  /** A quote is printed when its text before any `…` (Markdown's line wraps read as spaces) begins a string the code prints. */
  const printedBy = (quote: string, files: readonly string[] = CODE) => {
    const text = quote
      .split('…')[0]
      .replace(/\s*\n\s*/g, ' ')
      .trimEnd();
    return printedStarts(files).some((start) => start.startsWith(text));
  };

  const LOG_LINE = /^(DrawRequest[ :]|Data quality|the Application\s+Insights SDK)/;
  const quoted = ['docs/runbook.md', 'docs/deploy.md'].flatMap((file) =>
    [
      ...read(file)
        .replace(/^[ \t]*```[^]*?^[ \t]*```/gm, '')
        .matchAll(/`([^`]+)`/g),
    ]
      .map((m) => m[1])
      .filter((span) => LOG_LINE.test(span))
      .map((span) => ({ file, span })),
  );

  test('each quoted line begins what lib/ or functions/ prints', () => {
    expect(quoted.length).toBeGreaterThanOrEqual(8);
    expect(quoted.filter(({ span }) => !printedBy(span)).map(({ file, span }) => `${file}: ${span}`)).toEqual([]);
  });

  test('the line the runbook says the worker prints at start-up is the one functions/main.ts prints', () => {
    const startUp = /the worker\s+prints `([^`]+)`[^.]*?once at start-up/.exec(RUNBOOK)?.[1];
    expect(startUp).toBe('DrawRequest: Invalid settings:');
    expect(printedBy(startUp as string, ['functions/main.ts'])).toBe(true);
  });

  test('the check can fail: a line printed otherwise, or by another file, is refused', () => {
    // As the runbook quoted it before: the problems follow on lines of their own.
    expect(printedBy('DrawRequest failed: this instance is misconfigured. Invalid settings: - …')).toBe(false);
    expect(printedBy('DrawRequest failed: this instance is misconfigured. Invalid settings:', ['functions/main.ts'])).toBe(false);
    expect(printedBy('DrawRequest: settings invalid')).toBe(false);
  });
});
