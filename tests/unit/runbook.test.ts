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

describe('the access the runbook lists is what infra/ grants the on-call group, in the environments that grant it (issue #41 §3 item 1)', () => {
  const ROLE_NAMES = rolesNamed('Workbook Reader', 'Monitoring Reader', 'Log Analytics Reader', 'Storage Table Data Reader');
  /** How the runbook's "On" column names each scope the module assigns at (its resource symbols). */
  const SCOPE_NAMES: Record<string, string> = {
    workbook: 'the on-call workbook',
    appInsights: 'the Application Insights component',
    workspace: 'the workspace',
    account: 'the storage account',
    partnersTable: '`Partners`',
    drawsTable: '`DrawRequests`',
    stoppedClientsTable: '`StoppedClients`',
  };
  const rows = () => tableRows(section('### Your access'), /^\| To \| Role \| On \| Where \|$/);

  /** Each role assignment of infra/modules/onCallAccess.bicep as [role name, scope symbol]. */
  function granted(text = read('infra/modules/onCallAccess.bicep')): string[][] {
    const ids = Object.fromEntries([...text.matchAll(/^var (\w+) = '([0-9a-f-]{36})'$/gm)].map((m) => [m[1], m[2]]));
    return [...text.matchAll(/^resource \w+ 'Microsoft\.Authorization\/roleAssignments@[\d-]+' = \{\n[^]*?\n\}/gm)].map((m) => [
      ROLE_NAMES[ids[/roleDefinitions', (\w+)\)/.exec(m[0])?.[1] ?? '']] ?? 'an unknown role',
      /^ {2}scope: (\w+)$/m.exec(m[0])?.[1] ?? 'no scope',
    ]);
  }

  /** What is wrong between the module's grants and the rows that name a role: [] when nothing. */
  function problems(grants: string[][], listed: string[][]): string[] {
    const withRole = listed.filter((r) => Object.values(ROLE_NAMES).includes(r[1]));
    return [
      ...grants
        .filter(([role, scope]) => !withRole.some((r) => r[1] === role && r[2].includes(SCOPE_NAMES[scope] ?? scope)))
        .map(([role, scope]) => `granted, not listed: ${role} on ${scope}`),
      ...withRole.flatMap((r) =>
        Object.entries(SCOPE_NAMES)
          .filter(([, name]) => r[2].includes(name))
          .filter(([scope]) => !grants.some(([role, s]) => role === r[1] && s === scope))
          .map(([scope]) => `listed, not granted: ${r[1]} on ${scope}`),
      ),
    ];
  }

  test('each role onCallAccess.bicep assigns, at each scope, is in a row of "Your access", and no row names a role or scope it does not assign', () => {
    expect(granted()).toHaveLength(7);
    expect(problems(granted(), rows())).toEqual([]);
    // What on-call is not given is said, with whom to ask: rollback is GitHub's, a restart the platform team's.
    expect(rows().map((r) => r[2])).toEqual(expect.arrayContaining([expect.stringContaining('GitHub, not Azure'), expect.stringContaining("not on-call's")]));
  });

  test('a row that needs an Azure role names only environments whose parameters grant it, and names every one that does', () => {
    const grantsIn = (env: string) => {
      const parameters = JSON.parse(read(`infra/env/${env}.parameters.json`)) as { parameters: Record<string, { value: unknown }> };
      return (parameters.parameters.onCallGroupObjectId?.value ?? '') !== ''; // prod's placeholder: the deployment refuses it until it is filled in
    };
    const granting = ['dev', 'prod'].filter(grantsIn);
    expect(granting).toEqual(['prod']);
    for (const row of rows().filter((r) => Object.values(ROLE_NAMES).includes(r[1])))
      expect({ to: row[0], where: row[3].split(', ') }).toEqual({ to: row[0], where: granting });
    for (const row of rows().filter((r) => r[2].startsWith('GitHub, not Azure')))
      expect({ to: row[0], where: row[3] }).toEqual({ to: row[0], where: 'dev, prod' });
  });

  test('no step of the runbook writes a table: on-call holds no table write in any environment', () => {
    const commands = [...RUNBOOK.matchAll(/az storage (entity|table) (\w+)/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(commands.length).toBeGreaterThan(2);
    expect(commands.filter((c) => c !== 'entity query' && c !== 'entity show')).toEqual([]);
  });

  test('the checks can fail: a role the module does not grant, a scope it grants elsewhere, and a grant left out are each reported', () => {
    const listed = rows();
    // As the runbook had it before issue #41: the table role on the storage account, which the module no longer grants.
    expect(problems(granted(), [...listed, ['read the tables', 'Storage Table Data Reader', 'the storage account', 'prod']])).toEqual([
      'listed, not granted: Storage Table Data Reader on account',
    ]);
    expect(problems([...granted(), ['Storage Table Data Reader', 'loansTable']], listed)).toEqual([
      'granted, not listed: Storage Table Data Reader on loansTable',
    ]);
    expect(problems(granted().slice(1), listed)).toEqual([`listed, not granted: ${granted()[0][0]} on ${granted()[0][1]}`]);
  });
});

describe('every step of the runbook is possible with the access on-call holds where alerts page it (issue 49, items 7 and 8)', () => {
  /** What a step reads or runs, found by its words, and the role (of onCallAccess.bicep, by its scope symbol) or other access it needs. */
  const NEEDS: { readonly kind: string; readonly found: RegExp; readonly needs: readonly (readonly [string, string])[] | 'github' | 'none granted' }[] = [
    {
      kind: 'a workbook tile',
      found: /\btile \*|\bworkbook\b/i,
      needs: [
        ['Workbook Reader', 'workbook'],
        ['Monitoring Reader', 'appInsights'],
      ],
    },
    {
      kind: 'Application Insights',
      found: /\bApplication Insights Logs\b|`(?:traces|requests|customEvents|dependencies)`|\bquery\b/,
      needs: [['Monitoring Reader', 'appInsights']],
    },
    { kind: "the workspace's Usage", found: /`Usage`/, needs: [['Log Analytics Reader', 'workspace']] },
    { kind: 'storage metrics', found: /\bstorage metrics\b|\bstorage account's metrics\b/, needs: [['Monitoring Reader', 'account']] },
    { kind: 'the Partners table', found: /`Partners` row\b|--table-name Partners\b/, needs: [['Storage Table Data Reader', 'partnersTable']] },
    { kind: 'the draw rows', found: /\bdraw rows?\b|--table-name DrawRequests\b/, needs: [['Storage Table Data Reader', 'drawsTable']] },
    { kind: 'the stop list', found: /stop-list row|--table-name StoppedClients\b/, needs: [['Storage Table Data Reader', 'stoppedClientsTable']] },
    { kind: 'a GitHub workflow', found: /`gh (?:workflow run|run (?:list|watch))\b|\bRun workflow\b|^Roll back\b|^Stop one client\b/, needs: 'github' },
    {
      kind: 'the function app',
      found: /\blog stream\b|\bapp settings\b|\bsettings\b.*\bfunction app\b|\brestart the app\b|\bthe app's settings\b/i,
      needs: 'none granted',
    },
  ];
  /** A step that only tells someone something needs no access of its own. */
  const SPEAKS = /^(?:Tell|Escalate|Check Azure's status page|Otherwise escalate)\b|^`[\w-]+`: done\b/;
  const ASKS = /\bask the platform team\b/i;

  /** The numbered steps of the runbook (each with its continuation lines), with the heading above each. */
  function steps(text: string): { heading: string; step: string }[] {
    const found: { heading: string; step: string }[] = [];
    let heading = '';
    let current: string[] | undefined;
    const flush = () => {
      if (current) found.push({ heading, step: current.join(' ').replace(/\s+/g, ' ') });
      current = undefined;
    };
    let fence = false;
    for (const line of text.split('\n')) {
      if (/^\s*```/.test(line)) fence = !fence;
      if (fence) continue;
      if (/^#{2,3} /.test(line)) {
        flush();
        heading = line;
      } else if (/^\d+\. /.test(line)) {
        flush();
        current = [line.replace(/^\d+\. /, '')];
      } else if (current && /^ {3}\S/.test(line)) current.push(line.trim());
      else flush();
    }
    flush();
    return found;
  }

  /** The environments whose alerts page on-call, and what on-call holds in each: roles, and whether storage answers outside the network. */
  function pagingEnvironments(): { env: string; grantsRoles: boolean; storageReachable: boolean }[] {
    return ['dev', 'prod'].flatMap((env) => {
      const p = (JSON.parse(read(`infra/env/${env}.parameters.json`)) as { parameters: Record<string, { value: unknown }> }).parameters;
      if (p.alertsEnabled?.value !== true) return [];
      const closed = p.networkIsolated?.value === true && p.storagePublicAccess?.value === false;
      return [{ env, grantsRoles: (p.onCallGroupObjectId?.value ?? '') !== '', storageReachable: !closed }];
    });
  }

  /** Each role of onCallAccess.bicep as `role@scope`. */
  const GRANTED = new Set(
    (() => {
      const text = read('infra/modules/onCallAccess.bicep');
      const ids = Object.fromEntries([...text.matchAll(/^var (\w+) = '([0-9a-f-]{36})'$/gm)].map((m) => [m[2], m[1]]));
      const names: Record<string, string> = {
        workbookReader: 'Workbook Reader',
        monitoringReader: 'Monitoring Reader',
        logAnalyticsReader: 'Log Analytics Reader',
        storageTableDataReader: 'Storage Table Data Reader',
      };
      return [...text.matchAll(/^resource \w+ 'Microsoft\.Authorization\/roleAssignments@[\d-]+' = \{\n[^]*?\n\}/gm)].map((m) => {
        const roleVar = /roleDefinitions', (\w+)\)/.exec(m[0])?.[1] ?? '';
        const id = Object.keys(ids).find((k) => ids[k] === roleVar) ?? '';
        return `${names[ids[id] ?? roleVar] ?? roleVar}@${/^ {2}scope: (\w+)$/m.exec(m[0])?.[1] ?? ''}`;
      });
    })(),
  );

  /** What is wrong with each step: it names nothing it needs, or needs what on-call lacks somewhere alerts page it, without saying "ask the platform team". */
  function problems(text: string): string[] {
    const envs = pagingEnvironments();
    return steps(text).flatMap(({ heading, step }) => {
      const needs = NEEDS.filter((n) => n.found.test(step));
      const at = `${heading}: ${step.slice(0, 90)}`;
      if (needs.length === 0) return SPEAKS.test(step) || ASKS.test(step) ? [] : [`${at} — names no access it needs`];
      if (ASKS.test(step)) return [];
      return needs.flatMap((n) => {
        if (n.needs === 'github') return [];
        if (n.needs === 'none granted') return [`${at} — on-call holds no role on ${n.kind}`];
        const roles = n.needs;
        return envs.flatMap(({ env, grantsRoles, storageReachable }) => {
          const missing = roles.filter(([role, scope]) => !grantsRoles || !GRANTED.has(`${role}@${scope}`));
          if (missing.length > 0) return [`${at} — in ${env} on-call lacks ${missing.map(([r, s]) => `${r} on ${s}`).join(', ')}`];
          if (roles.some(([, scope]) => scope.endsWith('Table')) && !storageReachable) return [`${at} — in ${env} storage does not answer on-call's network`];
          return [];
        });
      });
    });
  }

  test('alerts page on-call in prod only, and the group is named there', () => {
    expect(pagingEnvironments()).toEqual([{ env: 'prod', grantsRoles: true, storageReachable: false }]);
    expect(GRANTED.size).toBe(7);
  });

  test('each step is mapped to a role on-call holds in every paging environment, to GitHub, or says "ask the platform team"', () => {
    expect(steps(RUNBOOK).length).toBeGreaterThan(25);
    expect(problems(RUNBOOK)).toEqual([]);
  });

  test('the check can fail: the log stream of "Telemetry silent" and the draw rows "the on-call group may" read', () => {
    const before = `### telemetry-silent\n\n1. In the function app's log stream look for \`DrawRequest: Invalid settings\`.\n2. Without a key, read the draw rows (**Reading the tables**; the on-call group may).\n3. Open tile *Telemetry silence*.\n4. Paint the wall.\n`;
    expect(problems(before)).toEqual([
      "### telemetry-silent: In the function app's log stream look for `DrawRequest: Invalid settings`. — on-call holds no role on the function app",
      "### telemetry-silent: Without a key, read the draw rows (**Reading the tables**; the on-call group may). — in prod storage does not answer on-call's network",
      '### telemetry-silent: Paint the wall. — names no access it needs',
    ]);
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
    expect(quoted.length).toBeGreaterThanOrEqual(4);
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
