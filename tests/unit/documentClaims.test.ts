/**
 * Sentences the documents state about the code, infra/ and the scripts, held to them (issue #41: each
 * check catches a kind of sentence that had drifted): an environment's status while its files cannot be
 * deployed, an app-settings list called complete, a count of identities or roles, a workbook tile said to
 * show what an alert pages on, the storage operations a `reasonDetail` names, and the answers partners
 * can get without an `X-Request-Id`. Each check is shown to fail on the sentence it was written against.
 * (tests/unit/documents.test.ts checks the commands documents give, a workflow's switches included.)
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tableRows } from '../support/markdown';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** What a person reads: README.md, docs/*.md and the decision records of docs/decisions/. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs')).flatMap((f) => (f.endsWith('.md') ? [`docs/${f}`] : [])),
  ...readdirSync(join(ROOT, 'docs', 'decisions')).flatMap((f) => (f.endsWith('.md') ? [`docs/decisions/${f}`] : [])),
];

/** Every file under `dir` (relative to the repository) whose name ends with `ending`. */
function filesUnder(dir: string, ending: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(`${dir}/${e.name}`, ending) : e.name.endsWith(ending) ? [`${dir}/${e.name}`] : [],
  );
}

/** The sentences of a Markdown text, each on one line (code blocks left out). */
function sentences(text: string): string[] {
  return text
    .replace(/```[^]*?```/g, '')
    .split(/\n\s*\n/)
    .flatMap((paragraph) => paragraph.replace(/\s+/g, ' ').split(/(?<=[.!?])\s+(?=[A-Z`*(])/));
}

describe("an environment's status is not stated while the scripts refuse its files", () => {
  /** The environments whose files hold a placeholder scripts/deploy.sh refuses (docs/deploy.md, "What a person does"). */
  function undeployable(): string[] {
    expect(read('scripts/deploy.sh')).toContain(`if grep -q 'REPLACE-WITH' "$params"; then`);
    return ['dev', 'prod'].filter((env) => read(`infra/env/${env}.parameters.json`).includes('REPLACE-WITH'));
  }

  /** Sentences of `text` that state `env`'s status: a "Status:" label, or "<env> is isolated/deployed/…". */
  function statusClaims(text: string, env: string): string[] {
    const claim = new RegExp(`\\bStatus\\b\\W{0,4}${env}\\b|\\b${env} (?:is|are) (?:now )?(?:isolated|closed|deployed|live|running|in production)\\b`, 'i');
    return sentences(text).filter((s) => claim.test(s));
  }

  test('no document states the status of an environment whose files cannot be deployed yet (its target is not its status)', () => {
    expect(undeployable()).toContain('prod');
    const found = DOCUMENTS.flatMap((file) => undeployable().flatMap((env) => statusClaims(read(file), env).map((s) => `${file}: ${s}`)));
    expect(found).toEqual([]);
  });

  test('the check can fail: the sentence deploy.md and decisions.md stated', () => {
    expect(statusClaims('**Status: prod is isolated, its storage closed (phase 2); dev is open** (it holds no records of value).', 'prod')).toHaveLength(1);
    expect(statusClaims('- **Status: prod isolated and closed, dev open.** The write path is runners.', 'prod')).toHaveLength(1);
    expect(statusClaims("Prod's files declare it isolated, its storage closed: that is prod's target.", 'prod')).toEqual([]);
  });
});

describe('the app settings docs/deploy.md calls complete are every setting functionApp.bicep sets', () => {
  /** The names infra/modules/functionApp.bicep gives its `appsettings` resource. */
  function appSettings(): string[] {
    const bicep = read('infra/modules/functionApp.bicep');
    const block = /^resource appSettings 'Microsoft\.Web\/sites\/config@[\d-]+' = \{[^]*?\n {2}properties: \{\n([^]*?)\n {2}\}\n\}/m.exec(bicep)?.[1] ?? '';
    return [...block.matchAll(/^ {4}(\w+): /gm)].map((m) => m[1]);
  }

  /** The paragraph that says the set is complete, up to what it says is not set. */
  const listed = (text: string) => /^App settings \(all set by `functionApp\.bicep`; the set is complete[^]*?(?= Not set:)/m.exec(text)?.[0] ?? '';

  /** The settings a list leaves out: each must be a code span of it, or match one written `PREFIX*`, `*SUFFIX` or `NAME=value`. */
  function unlisted(list: string, names: readonly string[]): string[] {
    const spans = [...list.matchAll(/`([^`]+)`/g)].map((m) => m[1].replace(/=.*$/, ''));
    const covers = (span: string, name: string) =>
      span === name || (span.endsWith('*') && name.startsWith(span.slice(0, -1))) || (span.startsWith('*') && name.endsWith(span.slice(1)));
    return names.filter((name) => !spans.some((span) => covers(span, name)));
  }

  test('the list names each one', () => {
    const names = appSettings();
    expect(names).toEqual(
      expect.arrayContaining(['AUTH_TENANT_ID', 'PARTNERS_TABLE', 'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', 'languageWorkers__node__arguments']),
    );
    expect(listed(read('docs/deploy.md'))).not.toBe('');
    expect(unlisted(listed(read('docs/deploy.md')), names)).toEqual([]);
  });

  test('the check can fail: the list as it stood, without the two settings of the Functions host', () => {
    const before =
      'App settings (all set by `functionApp.bicep`; the set is complete, anything else is removed on deployment): `AUTH_*`, table names, `DRAW_DAY_TIMEZONE`, `AzureWebJobsStorage__*`. Not set:';
    expect(unlisted(listed(before), ['AUTH_TENANT_ID', 'AzureWebJobsStorage__clientId', 'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', 'PARTNERS_TABLE'])).toEqual([
      'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT',
      'PARTNERS_TABLE',
    ]);
  });
});

describe('no count of identities or roles is written in prose (it goes stale when infra/ adds one)', () => {
  /** "two user-assigned managed identities", "the four data roles": a number qualifying identities or roles. */
  const COUNT = /\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+)\s+(?:[\w'’-]+\s+){0,3}?(?:identities|roles)\b/gi;
  const counts = (text: string) => [...text.matchAll(COUNT)].map((m) => m[0].replace(/\s+/g, ' '));

  test('in the documents, and in the comments and descriptions of infra/, the workflows and the scripts', () => {
    const files = [...DOCUMENTS, ...filesUnder('infra', '.bicep'), ...filesUnder('.github/workflows', '.yml'), ...filesUnder('scripts', '.sh')];
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => counts(read(file)).map((c) => `${file}: ${c}`))).toEqual([]);
  });

  test('the check can fail: the sentences decisions.md stated', () => {
    expect(counts('- **Two user-assigned managed identities per environment** (no credential to expire;')).toEqual(['Two user-assigned managed identities']);
    expect(counts('Administrator assignment is conditioned to the four data\n  roles the templates assign')).toEqual(['four data roles']);
    expect(counts('One credential loop per identity; exactly one of the plan identity; 20 per identity')).toEqual([]);
  });
});

describe("the runbook's tiles against the alerts", () => {
  const RUNBOOK = read('docs/runbook.md');

  /** The rate alerts of infra/modules/alerts.bicep: what each counts, and the failures it needs. */
  function rateAlerts(): { name: string; matching: string }[] {
    const alerts = read('infra/modules/alerts.bicep');
    const rates = /^var rateAlerts = \[([^]*?)^\]/m.exec(alerts)?.[1] ?? '';
    return [...rates.matchAll(/^\s+name: '([\w-]+)'[^]*?^\s+matching: '([^']+)'/gm)].map((m) => ({ name: m[1], matching: m[2] }));
  }

  /** The query of the workbook tile a runbook row names (by its title up to the first comma, colon or parenthesis). */
  function tileQuery(row: string): string {
    const tiles = (JSON.parse(read('infra/workbook.json')) as { items: { content: { title?: string; query?: string } }[] }).items;
    const found = tiles.filter((t) => t.content.query !== undefined && row.startsWith(String(t.content.title).split(/[,:(]/)[0].trim()));
    if (found.length !== 1) throw new Error(`no single workbook tile for ${row}`);
    return String(found[0].content.query);
  }

  /** Tile rows of `text` that say the tile shows what the alerts page on, where its query does not count what each rate alert counts, from the same minimum. */
  function unfoundedClaims(text: string): string[] {
    return tableRows(text, /^\| tile \| answers \| what to do about it \|$/).flatMap(([tile, answers]) => {
      if (!/\balerts? (?:page|pages|fire|fires) on\b/i.test(answers)) return [];
      const query = tileQuery(tile);
      const counted = rateAlerts().every((a) => query.includes(`countif(${a.matching})`)) && /\bmatching >= /.test(query);
      return counted ? [] : [`${tile}: ${answers}`];
    });
  }

  test('no tile is said to show what the alerts page on unless its query counts what each rate alert counts', () => {
    expect(rateAlerts().map((a) => a.name)).toEqual(['status-500-rate', 'status-502-rate']);
    expect(rateAlerts()[1].matching).toContain('reason != "KeyOutcomePending"');
    expect(unfoundedClaims(RUNBOOK)).toEqual([]);
  });

  test('the check can fail: the row as it stood (the tile counts every DependencyFailed; the alert leaves out KeyOutcomePending and needs 3)', () => {
    const before = RUNBOOK.replace(
      /^\| Share of 500 \(Failed\), 502 \(DependencyFailed\) and outcome unknown \| [^|]+ \|/m,
      '| Share of 500 (Failed), 502 (DependencyFailed) and outcome unknown | the percentages the two rate alerts page on, probes left out, and the share of commits whose outcome is unknown |',
    );
    expect(before).not.toBe(RUNBOOK);
    expect(unfoundedClaims(before)).toHaveLength(1);
  });
});

describe('the storage operations a CommitOutcomeUnknown names are the ones whose failure the code answers so', () => {
  /**
   * For each `outcome.outcomeUnknown(<result>.failure)` in lib/ and functions/, the storage operation whose
   * result it is: the `store.<operation>(` of the nearest `const <result> = await …` before it.
   */
  function operations(): string[] {
    const files = [...filesUnder('lib', '.ts'), ...filesUnder('functions', '.ts')];
    return [
      ...new Set(
        files.flatMap((file) => {
          const source = read(file);
          return [...source.matchAll(/\boutcome\.outcomeUnknown\((\w+)\.failure\)/g)].map((call) => {
            const before = source.slice(0, call.index);
            const results = [...before.matchAll(new RegExp(`\\bconst ${call[1]} = await [^;]*?\\bstore\\.(\\w+)\\(`, 'g'))];
            if (results.length === 0) throw new Error(`${file}: no storage call found for ${call[0]}`);
            return results[results.length - 1][1];
          });
        }),
      ),
    ].sort();
  }

  /** The operations the runbook's outcome table names for `CommitOutcomeUnknown`'s reasonDetail. */
  const named = (runbook: string) => {
    const detail = /`CommitOutcomeUnknown` \(`reasonDetail`: ([^]*?)\): /.exec(runbook)?.[1] ?? '';
    return [...detail.matchAll(/`(\w+)`/g)].map((m) => m[1]);
  };

  test("the runbook's outcome table names each (lib/outcome.ts puts the failed operation first in reasonDetail)", () => {
    expect(operations()).toEqual(expect.arrayContaining(['commitDraws', 'readDraws']));
    expect(read('lib/outcome.ts')).toContain('return `${failure.operation}${withCode');
    expect(operations().filter((op) => !named(read('docs/runbook.md')).includes(op))).toEqual([]);
  });

  test('the check can fail: the row as it stood named commitDraws only', () => {
    const before = '`CommitOutcomeUnknown` (`reasonDetail`: `commitDraws` and the code, status and storage code): the batch may have been recorded';
    expect(operations().filter((op) => !named(before).includes(op))).toEqual(['readDraws']);
  });
});

describe('answers partners can get without an X-Request-Id are in their guide', () => {
  /** Sentences saying every answer has an X-Request-Id, where they do not keep to the service's own answers. */
  function unqualified(text: string): string[] {
    return sentences(text).filter(
      (s) => s.includes('X-Request-Id') && /\bevery (?:answer|response)\b(?! of the service| the function produces)/i.test(s) && !s.includes('413'),
    );
  }

  test("the Functions host's 413 (infra/ sets its body limit) has a row in what to retry and is said to carry none", () => {
    expect(read('infra/modules/functionApp.bicep')).toMatch(/^\s+FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: /m);
    const guide = read('docs/partners.md');
    const retry = tableRows(guide, /^\| answer \| retry\? \|$/).map((r) => r[0]);
    expect(retry).toEqual(expect.arrayContaining(['`204`', '`400`', '`401`', '`413`', '`500`', '`502`']));
    expect(sentences(guide).filter((s) => s.includes('413') && /\bno `X-Request-Id`|without (?:one|an `X-Request-Id`)/.test(s)).length).toBeGreaterThan(0);
    expect(DOCUMENTS.flatMap((file) => unqualified(read(file)).map((s) => `${file}: ${s}`))).toEqual([]);
  });

  test('the check can fail: the sentences partners.md and the README stated', () => {
    expect(unqualified('Every answer, `204` included, has an `X-Request-Id` header (also `requestId` in error bodies). Quote it.')).toHaveLength(1);
    expect(unqualified('A batch is recorded whole. Every answer carries an `X-Request-Id` to quote to support.')).toHaveLength(1);
    expect(unqualified('Every answer of the service, `204` included, has an `X-Request-Id` header.')).toEqual([]);
  });
});
