/**
 * What the documents tell a person to run or set exists (issue #33): every `npm` command is a script or
 * npm's own, every file a command names is there, every flag given to one of our scripts is one it
 * accepts, every `gh workflow run` names a workflow that can be dispatched with the inputs given, every
 * setting a table lists is read by lib/config.ts and named in local.settings.example.json, every other
 * ALL_CAPS name is one the code knows, and no telling figure of bench/results.md (see `telling`)
 * is copied elsewhere.
 * (tests/unit/docs.test.ts checks links and contract sections; tests/unit/errorCatalogue.test.ts the
 * error tables.)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { SETTING_NAMES } from '../../lib/config';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The documents a person reads: README.md, docs/*.md and the decision records of docs/decisions/. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(join(ROOT, 'docs', 'decisions'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/decisions/${f}`),
];

interface Line {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/** The text of every file under `dir`. */
function textsUnder(dir: string, except: readonly string[] = []): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    // The repository's own files: not what npm installed (.ci/node22 and .ci/node24 hold Node binaries once installed).
    if (except.includes(path) || e.name === 'node_modules') return [];
    return e.isDirectory() ? textsUnder(path, except) : [readFileSync(join(ROOT, path), 'utf8')];
  });
}

const at = (l: Line) => `${l.file}:${l.line}: ${l.text.trim()}`;

/**
 * The code a document shows, one command per entry: each line of a fenced block (a `\` continuation
 * joined, a `#` comment cut off), and each inline code span.
 */
function codeOf(file: string, text = read(file)): Line[] {
  const lines = text.split('\n');
  const out: Line[] = [];
  let fence = false;
  let pending: Line | undefined;
  lines.forEach((text, i) => {
    if (/^\s*```/.test(text)) {
      fence = !fence;
      return;
    }
    if (fence) {
      const joined = pending ? { ...pending, text: `${pending.text} ${text.trim()}` } : { file, line: i + 1, text };
      if (/\\\s*$/.test(text)) pending = { ...joined, text: joined.text.replace(/\\\s*$/, '') };
      else {
        pending = undefined;
        out.push({ ...joined, text: joined.text.replace(/(^|\s)#.*$/, '') });
      }
      return;
    }
    for (const m of text.matchAll(/`([^`]+)`/g)) out.push({ file, line: i + 1, text: m[1] });
  });
  return out;
}

const CODE = DOCUMENTS.flatMap((file) => codeOf(file));
const SCRIPTS: Record<string, string> = JSON.parse(read('package.json')).scripts;
/** npm's own commands the documents use. */
const NPM_BUILTINS = new Set(['ci', 'install', 'test', 'start', 'run']);

describe('every command a document tells a person to run exists', () => {
  test('`npm run <script>` and `npm <command>` name a script of package.json or a command of npm', () => {
    const named = CODE.flatMap((l) =>
      [...l.text.matchAll(/(?:^|[\s;&|(])npm (?:run ([\w:-]+)|([a-z][\w-]*))/g)].map((m) => ({ l, script: m[1], command: m[2] })),
    );
    expect(named.length).toBeGreaterThan(40);
    const unknown = named.filter(({ script, command }) => (script !== undefined ? !(script in SCRIPTS) : !NPM_BUILTINS.has(command)));
    expect(unknown.map(({ l }) => at(l))).toEqual([]);
  });

  test('every file of the repository a command names exists (`scripts/…`, `bash`/`node` paths, `examples/…`)', () => {
    const paths = CODE.flatMap((l) =>
      [
        ...l.text.matchAll(/(?:^|[\s"'(])((?:\.\/)?(?:scripts|examples|bench|dev|infra|\.ci)\/[\w./-]*[\w])/g),
        ...l.text.matchAll(/(?:^|\s)(?:bash|node|sh) ((?:\.\/)?[\w.-]+\/[\w./-]+)/g),
      ].map((m) => ({ l, path: m[1] })),
    );
    expect(paths.length).toBeGreaterThan(20);
    // `node dist/x.js` runs what `tsc` builds from x.ts.
    const source = (path: string) => path.replace(/^dist\/(.*)\.js$/, '$1.ts');
    expect(paths.filter(({ path }) => !existsSync(join(ROOT, source(path)))).map(({ l, path }) => `${path} (${at(l)})`)).toEqual([]);
  });

  /** Our own commands, each with the source whose option parsing says which flags it takes. */
  const OUR_COMMANDS: { readonly pattern: RegExp; readonly source: string }[] = [
    { pattern: /(?:^|\s)(?:bash )?(?:\.\/)?scripts\/deploy\.sh\b/, source: 'scripts/deploy.sh' },
    { pattern: /(?:^|\s)(?:bash )?(?:\.\/)?scripts\/rollback\.sh\b/, source: 'scripts/rollback.sh' },
    ...Object.entries(SCRIPTS).flatMap(([name, command]) => {
      const built = /node dist\/([\w/.-]+)\.js\s*$/.exec(command);
      return built ? [{ pattern: new RegExp(`npm run ${name.replace(/[:-]/g, '\\$&')}(?![\\w:-])`), source: `${built[1]}.ts` }] : [];
    }),
  ];

  /** The flags a script's option parsing accepts: shell `case` patterns and comparisons, TypeScript literals and parseArgs options. */
  function acceptedFlags(source: string): Set<string> {
    const text = read(source);
    const flags = new Set<string>();
    if (source.endsWith('.sh')) {
      for (const m of text.matchAll(/^\s*(--[\w-]+(?:\|--[\w-]+)*)\)/gm)) for (const f of m[1].split('|')) flags.add(f);
      for (const m of text.matchAll(/= "(--[\w-]+)"/g)) flags.add(m[1]);
    } else {
      for (const m of text.matchAll(/'(--[\w-]+)=?'/g)) flags.add(m[1]);
      const options = /parseArgs\(\{\s*options: \{([^]*?)\n\s*\},/.exec(text)?.[1] ?? '';
      for (const m of options.matchAll(/^\s*'?([\w-]+)'?: \{/gm)) flags.add(`--${m[1]}`);
    }
    return flags;
  }

  test('every flag given to one of our scripts is one it accepts', () => {
    const given = CODE.flatMap((l) =>
      OUR_COMMANDS.flatMap(({ pattern, source }) => {
        const m = pattern.exec(l.text);
        if (!m) return [];
        // Flags of the script itself: not those inside quoted arguments or `$(…)` commands given as values.
        const rest = l.text
          .slice(m.index + m[0].length)
          .replace(/\$\([^)]*\)/g, '')
          .replace(/"[^"]*"|'[^']*'/g, '""');
        return [...rest.matchAll(/(?:^|\s|\[)(--[a-z][\w-]*)/g)].map((f) => ({ l, source, flag: f[1] }));
      }),
    );
    expect(given.length).toBeGreaterThan(5);
    const refused = given.filter(({ source, flag }) => !acceptedFlags(source).has(flag));
    expect(refused.map(({ l, source, flag }) => `${flag} is not an option of ${source} (${at(l)})`)).toEqual([]);
  });

  /** A workflow of .github/workflows/ by file name, with its dispatch inputs (undefined: no such file, or not dispatchable). */
  function dispatchInputs(file: string): Record<string, { type?: string; required?: boolean; default?: unknown; options?: string[] }> | undefined {
    const path = join(ROOT, '.github', 'workflows', file);
    if (!existsSync(path)) return undefined;
    const on = (parse(readFileSync(path, 'utf8')) as { on: Record<string, { inputs?: Record<string, object> } | null> }).on;
    return on.workflow_dispatch === undefined ? undefined : (on.workflow_dispatch?.inputs ?? {});
  }

  /** What is wrong with a `gh workflow run <file> -f name=value …` (or `gh run list -w <file>`) command: [] when nothing. */
  function workflowCommandProblems(command: string): string[] {
    const listed = /\bgh run (?:list|watch)\b.*?(?:-w|--workflow) ([\w.-]+)/.exec(command);
    if (listed) return existsSync(join(ROOT, '.github', 'workflows', listed[1])) ? [] : [`no workflow ${listed[1]}`];
    const run = /\bgh workflow run ([\w.-]+)((?:\s+(?:-f|--raw-field|-F|--field) [\w-]+=\S*)*)/.exec(command);
    if (!run) return [];
    const inputs = dispatchInputs(run[1]);
    if (inputs === undefined) return [`no workflow ${run[1]} that can be dispatched`];
    const given = Object.fromEntries([...run[2].matchAll(/(?:-f|--raw-field|-F|--field) ([\w-]+)=(\S*)/g)].map((m) => [m[1], m[2]]));
    return [
      ...Object.keys(given)
        .filter((name) => !(name in inputs))
        .map((name) => `${run[1]} has no input ${name}`),
      ...Object.entries(inputs)
        .filter(([name, input]) => input.required === true && input.default === undefined && !(name in given))
        .map(([name]) => `${run[1]} needs input ${name}`),
      ...Object.entries(given)
        .filter(([name, value]) => inputs[name]?.options !== undefined && !value.startsWith('<') && !inputs[name].options?.includes(value))
        .map(([name, value]) => `${run[1]}: ${value} is not an option of ${name}`),
    ];
  }

  test('every `gh workflow run` names a workflow of .github/workflows/ that can be dispatched, with its inputs (and `gh run list -w` a workflow)', () => {
    const commands = CODE.filter((l) => /\bgh (?:workflow run|run (?:list|watch)\b.*?(?:-w|--workflow) )/.test(l.text));
    expect(commands.filter((l) => /gh workflow run stop-client\.yml/.test(l.text)).length).toBeGreaterThanOrEqual(2); // runbook and deploy.md
    expect(commands.flatMap((l) => workflowCommandProblems(l.text).map((p) => `${p} (${at(l)})`))).toEqual([]);
  });

  test('the workflow command check can fail: a missing file, an unknown or missing input, a value not among the options', () => {
    expect(workflowCommandProblems('gh workflow run stop-client.yml -f environment=prod -f client_id=<client id>')).toEqual([]);
    expect(workflowCommandProblems('gh workflow run stop.yml -f environment=prod')).toEqual(['no workflow stop.yml that can be dispatched']);
    expect(workflowCommandProblems('gh workflow run stop-client.yml -f environment=prod -f client=<id>')).toEqual([
      'stop-client.yml has no input client',
      'stop-client.yml needs input client_id',
    ]);
    expect(workflowCommandProblems('gh workflow run stop-client.yml -f environment=staging -f client_id=<id>')).toEqual([
      'stop-client.yml: staging is not an option of environment',
    ]);
    expect(workflowCommandProblems('gh run list -w rollback.yml -b main')).toEqual(['no workflow rollback.yml']);
  });

  /**
   * A switch of a workflow named in a document's prose ("*With infrastructure*" for `with_infrastructure`)
   * where the document gives that workflow's `gh workflow run` command but none that sets the switch: the
   * reader copies a command that does not do what the prose says (issue #41).
   */
  function unsetSwitches(file: string, text = read(file)): string[] {
    const prose = text
      .replace(/```[^]*?```/g, '')
      .replace(/`[^`]*`/g, '')
      .toLowerCase();
    const commands = codeOf(file, text).map((l) => l.text);
    return [...new Set(commands.flatMap((c) => [...(/\bgh workflow run ([\w.-]+)/.exec(c)?.slice(1) ?? [])]))].flatMap((workflow) =>
      Object.entries(dispatchInputs(workflow) ?? {})
        .filter(([name, input]) => input.type === 'boolean' && prose.includes(name.replace(/_/g, ' ')))
        .filter(
          ([name]) => !commands.some((c) => c.includes(`gh workflow run ${workflow}`) && new RegExp(`(?:-f|-F|--field|--raw-field) ${name}=true\\b`).test(c)),
        )
        .map(([name]) => `${file}: says "${name.replace(/_/g, ' ')}" but no \`gh workflow run ${workflow}\` it gives sets -f ${name}=true`),
    );
  }

  test('a workflow switch a document names in prose is set by a command it gives for that workflow', () => {
    expect(DOCUMENTS.flatMap((file) => unsetSwitches(file))).toEqual([]);
    // The check sees the runbook's rollback: "with infrastructure", and a command that sets it.
    expect(read('docs/runbook.md').toLowerCase()).toContain('with infrastructure');
  });

  test('the switch check can fail: a rollback "with infrastructure" whose only command deploys code', () => {
    const runbook = read('docs/runbook.md');
    const withoutSwitch = runbook.replace(/ -f with_infrastructure=true/g, '');
    expect(withoutSwitch).not.toBe(runbook);
    expect(unsetSwitches('docs/runbook.md', withoutSwitch)).toEqual([
      'docs/runbook.md: says "with infrastructure" but no `gh workflow run deploy.yml` it gives sets -f with_infrastructure=true',
    ]);
  });

  test('the flag check can fail: an option a script does not parse is refused', () => {
    expect(acceptedFlags('scripts/deploy.sh')).toEqual(new Set(['--what-if', '--infra-only', '--code-only', '--step', '--package', '--plan', '--yes']));
    expect(acceptedFlags('examples/submit-draws.ts').has('--idempotency-key')).toBe(true);
    expect(acceptedFlags('scripts/partnerDocument.ts')).toEqual(new Set(['--host', '--tenant', '--app-id-uri', '--login-endpoint', '--out']));
  });
});

describe('every setting a document names exists', () => {
  const example = Object.keys(JSON.parse(read('local.settings.example.json')).Values as Record<string, string>);

  test("every setting lib/config.ts reads is in local.settings.example.json, and that lists nothing else but the host's own", () => {
    // Settings are read by name through lib/config.ts's helpers: get('AUTH_AUDIENCE'), integer('MAX_BATCH_SIZE', …).
    const readByConfig = [...new Set([...read('lib/config.ts').matchAll(/\b[a-z]\w*\('([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)].map((m) => m[1]))];
    expect(readByConfig.length).toBeGreaterThan(15);
    expect([...readByConfig].sort()).toEqual([...SETTING_NAMES].sort());
    expect(SETTING_NAMES.filter((name) => !example.includes(name))).toEqual([]);
    expect(example.filter((name) => !(SETTING_NAMES as readonly string[]).includes(name))).toEqual(['FUNCTIONS_WORKER_RUNTIME', 'AzureWebJobsStorage']);
  });

  // The one settings table (contract §5); the README and the contributors' guide point to it.
  test.each(['docs/contract.md'])('the settings table of %s lists exactly the settings of lib/config.ts, in order', (file) => {
    const lines = read(file).split('\n');
    const header = lines.findIndex((l) => /^\| Setting \|/.test(l));
    const rows = lines.slice(header + 2).filter((_, i, all) => all.slice(0, i + 1).every((l) => l.startsWith('|')));
    const names = rows.flatMap((row) => [...row.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]));
    expect(names).toEqual([...SETTING_NAMES]);
  });

  /**
   * Every other ALL_CAPS name in a code span is one the code, infrastructure or pipeline knows (a setting
   * of the example client or the smoke check, a constant, a reason code), except names of other tools'
   * environments. The telemetry SDK's variables are checked by tests/integration/telemetry.test.ts against
   * docs/contributing.md §9, "Telemetry settings", so that section is left to it.
   */
  const EXTERNAL = new Set(['REQUESTS_CA_BUNDLE', 'GITHUB_TOKEN']);
  /** bench/results.md is a document the bench writes, not code: a name it alone mentions is not known. */
  const KNOWN_BY_CODE = ['lib', 'functions', 'scripts', 'examples', 'bench', 'dev', 'infra', 'tests/support', '.github', '.ci']
    .flatMap((dir) => textsUnder(dir, ['bench/results.md']))
    .join('\n');

  /** A superseded record tells what was, in the names of then: a constant it names may be gone. */
  const superseded = (file: string) => file.startsWith('docs/decisions/') && /^Status: Superseded/m.test(read(file));

  test("every ALL_CAPS name in a code span exists in the code (or is another tool's)", () => {
    const names = DOCUMENTS.filter((file) => !superseded(file)).flatMap((file) => {
      let text = read(file);
      if (file === 'docs/contributing.md') text = text.replace(/^## \d+\. Telemetry settings\n[^]*?(?=^## |(?![^]))/m, (s) => s.replace(/[^\n]/g, ' '));
      return text
        .split('\n')
        .flatMap((line, i) => [...line.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map((m) => ({ l: { file, line: i + 1, text: line }, name: m[1] })));
    });
    expect(names.length).toBeGreaterThan(100);
    const unknown = names.filter(({ name }) => !EXTERNAL.has(name) && !new RegExp(`\\b${name}\\b`).test(KNOWN_BY_CODE));
    expect(unknown.map(({ l, name }) => `${name} (${l.file}:${l.line})`)).toEqual([]);
  });
});

describe("bench/results.md's figures are not copied into other documents", () => {
  /** A figure with its unit: `1.39×`, `332 ms`, `90.1 MiB`, `45 %`, `$52.40`, normalised (`1,320 ms` is `1320 ms`). */
  const FIGURE = /(?<![\w.,])(?:\$\s?(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s?(×|%|ms|s|MiB|KiB|GiB)(?![\w/]))/g;
  /** A bound (`≤ 250 ms`) is a target, not a result; the end of a range (`1.0 to 1.7 ms`) sums up many runs. */
  const BOUND = /(?:≤|≥|<|>|within|bound|at most|at least|\d\s?(?:to|–|-))\s*$/;
  /**
   * A list price in its billing unit (`$0.000026 per GB-s`, `$0.01 an hour`) is an input the cost model takes
   * from Microsoft's pricing, stated once with its source; results.md's dollars are costs per call or per month.
   */
  const PRICE_UNIT = /^\s?(?:per (?:GB-s|GB|million executions|million queries)|an hour|a zone)\b/;

  function figures(text: string): string[] {
    return [...text.matchAll(FIGURE)]
      .filter((m) => !BOUND.test(text.slice(0, m.index)))
      .filter((m) => m[1] === undefined || !PRICE_UNIT.test(text.slice(m.index + m[0].length)))
      .map((m) => (m[1] !== undefined ? `$${m[1].replace(/,/g, '')}` : `${m[2].replace(/,/g, '')} ${m[3]}`));
  }

  /**
   * A measured figure worth protecting: one with decimals, a dollar amount, or a whole number of at least
   * 100 ms, MiB or KiB. Whole-number `%`, `×` and `s` figures and smaller whole ms/MiB/KiB are not checked:
   * any text may say them for itself (`2 × AMD EPYC`, `31 ms` of a dated older run), so a match is no copy.
   */
  const telling = (figure: string) => /\.\d/.test(figure) || figure.startsWith('$') || /^\d{3,} (ms|MiB|KiB)$/.test(figure);

  /** Every figure in results.md's tables: cells with a unit, and cells under a header naming one (`p50 ms`, `RSS MiB`). */
  function resultFigures(): Set<string> {
    const lines = read('bench/results.md').split('\n');
    const found = new Set<string>();
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i].startsWith('|') || !/^\|[-| :]+\|$/.test(lines[i + 1] ?? '')) continue;
      const header = lines[i].split('|').map((c) => c.trim());
      for (i += 2; i < lines.length && lines[i].startsWith('|'); i++) {
        lines[i].split('|').forEach((cell, column) => {
          if (/^target\b/.test(header[column] ?? '')) return; // the bounds, not results
          for (const f of figures(cell)) found.add(f);
          const unit = /(?:^|\s|\()(ms|MiB|KiB|%|\$)(?:\)|\s|\/|$)/.exec(header[column] ?? '')?.[1];
          if (unit === undefined) return;
          for (const m of cell.replace(/\*/g, '').matchAll(/(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(?![\w.])/g)) {
            const n = m[1].replace(/,/g, '');
            found.add(unit === '$' ? `$${n}` : `${n} ${unit}`);
          }
        });
      }
    }
    return found;
  }

  /** Every line of a document: no section is exempt (docs/decisions/0125-figures-live-once-in-bench-results-md.md). */
  function documentLines(file: string): Line[] {
    return read(file)
      .split('\n')
      .map((text, i) => ({ file, line: i + 1, text }));
  }

  const results = resultFigures();

  test('a list price in its billing unit is an input, a cost per call or per month is a figure', () => {
    expect(figures('$0.000026 per GB-s, $0.01 an hour, $0.50 a zone a month and $0.40 per million executions')).toEqual([]);
    expect(figures('$0.40 per million calls, $5.18 a month, 1.33× and 332 ms')).toEqual(['$0.40', '$5.18', '1.33 ×', '332 ms']);
  });

  test('results.md has figures to protect', () => {
    expect(results.size).toBeGreaterThan(100);
    // Of every kind the tables hold (not particular values: a bench run rewrites them all).
    for (const unit of [' ×', ' ms', ' MiB', ' KiB', ' %']) expect([...results].some((f) => f.endsWith(unit))).toBe(true);
  });

  test('no other document states a figure of results.md (link to bench/results.md instead)', () => {
    const copied = DOCUMENTS.flatMap(documentLines).flatMap((l) => {
      const hits = figures(l.text).filter((f) => telling(f) && results.has(f));
      return hits.length > 0 ? [`${at(l).slice(0, 160)} [${hits.join(', ')}]`] : [];
    });
    expect(copied).toEqual([]);
  });
});

test("deploy.md's migration first stops any other remover of key rows (issue 46): nothing may remove them", () => {
  const migration = /^## \d+\. Migration of an existing environment\n([^]*?)(?=^## |(?![^]))/m.exec(read('docs/deploy.md'))?.[1] ?? '';
  const beforeSteps = migration.split(/^1\. /m)[0];
  expect(beforeSteps).toMatch(/stop any other remover of `IdempotencyKeys` rows/);
  expect(beforeSteps).toContain('decisions/0180-nothing-removes-key-rows.md');
});
