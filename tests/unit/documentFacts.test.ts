/**
 * Facts the documents state in more than one place, each held to the code it describes (issue 49): one check
 * per kind of statement that had drifted, each shown failing on the sentence it was written against.
 * - a status's headers and body: which 502s carry `Retry-After`, what a keyed 502 and a lost race's 400 say;
 * - a command's arguments: the partner document's file name, GitHub settings' reviewers, the example's answer;
 * - what a workflow or a deployment step does: the what-if runs on main only, the smoke check writes its
 *   refusal, the app's triggers need no queue or table role; and what the lender hands a partner.
 * (The time bound partners are told is recomputed from lib/ in tests/unit/readers.test.ts; the role each
 * runbook step needs is mapped in tests/unit/runbook.test.ts.)
 */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { InvocationOutcome } from '../../lib/outcome';
import { OUTCOME_UNKNOWN_DETAIL, dependencyFailed } from '../../lib/problem';
import { noTelemetry } from '../../lib/telemetry';
import { tableRows } from '../support/markdown';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** What a reader reads as prose: README, docs/*.md, the accepted decision records, and openapi.yaml's descriptions. */
function documents(): { file: string; text: string }[] {
  const records = readdirSync(join(ROOT, 'docs', 'decisions'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => ({ file: `docs/decisions/${f}`, text: read(`docs/decisions/${f}`) }))
    .filter(({ text }) => !/^Status: Superseded/m.test(text)); // a superseded record keeps what was decided then
  const descriptions: string[] = [];
  const walk = (value: unknown, under = ''): void => {
    if (Array.isArray(value)) value.forEach((item) => walk(item, under));
    else if (value !== null && typeof value === 'object')
      for (const [key, item] of Object.entries(value)) {
        // A header's description speaks of the header without naming it: one sentence, named.
        if (key === 'description' && typeof item === 'string')
          descriptions.push(under === 'Retry-After' ? `| \`Retry-After\`: ${item.replace(/\s+/g, ' ')}` : item);
        else walk(item, key);
      }
  };
  walk(parse(read('docs/openapi.yaml')));
  return [
    { file: 'README.md', text: read('README.md') },
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => ({ file: `docs/${f}`, text: read(`docs/${f}`).replace(/^\|.*\| superseded by \d{4} \|$/gm, '') })), // the index names superseded records
    ...records,
    { file: 'docs/openapi.yaml', text: descriptions.join('\n\n') },
  ];
}

/** The sentences of a text (code blocks left out; each table row one sentence), on one line each. */
function sentences(text: string): string[] {
  return text
    .replace(/```[^]*?```/g, '')
    .split(/\n\s*\n|\n(?=\|)/)
    .flatMap((block) => (block.startsWith('|') ? [block.replace(/\s+/g, ' ')] : block.replace(/\s+/g, ' ').split(/(?<=[.!?])\s+(?=[A-Z`*(])/)));
}

const everySentence = () => documents().flatMap(({ file, text }) => sentences(text).map((s) => ({ file, s })));

// ----------------------------------------------------------------------------- a status's headers and body

type Kind = 'nothing submitted' | 'outcome unknown';
/** A 502 the code can answer: its detail's kind, whether its request sent a key, and whether it carries Retry-After. */
interface Answer502 {
  readonly kind: Kind;
  readonly keyed: boolean;
  readonly retryAfter: boolean;
}

/** Every storage 502 lib/outcome.ts builds, keyed and not (the identity provider's, before any key is read, is the nothing-submitted one). */
function answers502(): Answer502[] {
  const context = { invocationId: 'i', log: () => undefined, warn: () => undefined, error: () => undefined } as unknown as InvocationContext;
  const failure = { code: 'ERR_STORAGE_FAILED', operation: 'commitDraws' } as const;
  const describe = (response: HttpResponseInit, keyed: boolean): Answer502 => ({
    kind: (typeof response.body === 'string' ? response.body : '').includes(OUTCOME_UNKNOWN_DETAIL) ? 'outcome unknown' : 'nothing submitted',
    keyed,
    retryAfter: (response.headers as Record<string, string> | undefined)?.['Retry-After'] !== undefined,
  });
  return [false, true].flatMap((keyed) => {
    const made = () => Object.assign(new InvocationOutcome(context, noTelemetry), { sentKey: keyed });
    return [
      describe(made().storageFailed(failure), keyed),
      describe(made().outcomeUnknown(failure), keyed),
      ...(keyed ? [describe(made().outcomePending('2026-11-28', Date.now() + 60_000, Date.now()), true)] : []),
    ];
  });
}

/**
 * The 502s a sentence says carry no `Retry-After`: [] when it says none. Which detail (`outcome` unknown,
 * `nothing` submitted, or any) and which requests (without a key, or any) it speaks of, by its words.
 */
function saysWithoutRetryAfter(sentence: string): { kind?: Kind; keyed?: boolean }[] {
  if (!sentence.includes('Retry-After')) return [];
  const absent =
    /\b(?:without|absent|except|does not carry|do not carry|carries no|no `?Retry-After)\b|\bthe second does not\b|\bthe only\b[^.]*\bwith it\b/i.test(
      sentence,
    );
  if (!absent) return [];
  const kind: Kind | undefined = /\boutcome[- ]unknown\b|\boutcome is unknown\b|\bwhose outcome\b/i.test(sentence)
    ? 'outcome unknown'
    : /\bnothing[- ]submitted\b|\bnothing was submitted\b/i.test(sentence) && !/\bthe second\b/.test(sentence)
      ? 'nothing submitted'
      : undefined;
  const unkeyed = /\bwithout (?:an? )?(?:`?Idempotency-Key`?|key)\b|\bunkeyed\b|\bno key\b/i.test(sentence);
  return [{ kind, keyed: unkeyed ? false : undefined }];
}

/** The claims among `found` that the code's answers contradict: a 502 said to carry no Retry-After that does. */
function untrueAbsences(found: readonly { file: string; s: string }[], answers = answers502()): string[] {
  return found.flatMap(({ file, s }) =>
    saysWithoutRetryAfter(s).flatMap((claim) => {
      const spoken = answers.filter((a) => (claim.kind === undefined || a.kind === claim.kind) && (claim.keyed === undefined || a.keyed === claim.keyed));
      return spoken.some((a) => a.retryAfter) ? [`${file}: ${s.slice(0, 140)}`] : [];
    }),
  );
}

describe("a 502's Retry-After, as the code answers it (items 1 and 14)", () => {
  test('the code: every 502 carries Retry-After but the outcome-unknown one to a request without a key', () => {
    const answers = answers502();
    expect(answers.filter((a) => !a.retryAfter)).toEqual([{ kind: 'outcome unknown', keyed: false, retryAfter: false }]);
    expect(answers.filter((a) => a.keyed).every((a) => a.kind === 'outcome unknown')).toBe(true);
    expect(dependencyFailed('i').headers).toEqual(expect.objectContaining({ 'Retry-After': expect.any(String) as unknown }));
  });

  test('no document, openapi.yaml description or accepted decision says a 502 lacks Retry-After where the code gives it', () => {
    const found = everySentence();
    expect(found.filter(({ s }) => saysWithoutRetryAfter(s).length > 0).length).toBeGreaterThan(1);
    expect(untrueAbsences(found)).toEqual([]);
  });

  test('the check can fail: openapi.yaml and decisions.md as they stood', () => {
    const before = [
      'The first carries Retry-After (seconds to wait at least before resending); the second does not, except for a keyed batch whose key is past its 24 hours.',
      '| `Retry-After`: Seconds to wait before resending, on every 502 that says nothing was submitted. Absent on the 502 whose outcome is unknown: resend that batch only with its Idempotency-Key.',
      'Now an unrecorded batch in the grace gets the outcome-unknown `502` with `Retry-After` the seconds until the grace ends: the only outcome-unknown 502 with it, given only to keyed requests.',
      'Without `Retry-After` (the outcome-unknown 502) the backoff stays short: the client always sends a key.',
    ].map((s) => ({ file: 'before', s }));
    expect(untrueAbsences(before)).toHaveLength(4);
    expect(untrueAbsences([{ file: 'now', s: 'On every 502 except the outcome-unknown 502 to a request without an Idempotency-Key.' }])).toEqual([]);
  });
});

/** Sentences saying every (other) 502 says nothing was recorded, not kept to requests without a key. */
const everyOther502 = (found: readonly { file: string; s: string }[]) =>
  found.filter(
    ({ s }) =>
      /\b(?:every|all|any)(?: other)? `?502`?s?\b[^.]*\bnothing was (?:recorded|submitted)\b/i.test(s) &&
      !/\bwithout (?:an? )?(?:`?Idempotency-Key`?|key)\b|\bunkeyed\b/i.test(s),
  );

/** Sentences saying a 400 lists every rejected element, not kept to the draw rules' refusal. */
const everyElement400 = (found: readonly { file: string; s: string }[]) =>
  found.filter(({ s }) => /\b(?:a|every|each) `?400`? lists? every rejected element\b/i.test(s) && !/\brules?\b|\brace\b/i.test(s));

describe('what a 502 and a 400 say, as the code answers (items 3 and 6)', () => {
  test("a keyed request's storage 502 is the outcome-unknown one, so no document says every other 502 says nothing was recorded", () => {
    expect(answers502().some((a) => a.keyed && a.kind === 'outcome unknown')).toBe(true);
    expect(everyOther502(everySentence()).map(({ file, s }) => `${file}: ${s}`)).toEqual([]);
    expect(everyOther502([{ file: 'runbook', s: 'Every other 502 says nothing was recorded, and is true.' }])).toHaveLength(1);
  });

  test('a lost race answers one element, so no document says a 400 lists every rejected element without naming the rules', () => {
    // lib/keyedBatch.ts and functions/drawRequest.ts answer a lost race with the one element whose insert failed.
    const lostRace = [read('lib/keyedBatch.ts'), read('functions/drawRequest.ts')].join('\n');
    expect(lostRace).toMatch(/rejected\(\[lost\]\)/);
    expect(everyElement400(everySentence()).map(({ file, s }) => `${file}: ${s}`)).toEqual([]);
    expect(everyElement400([{ file: 'partners', s: 'A `400` lists every rejected element, each with exactly one error.' }])).toHaveLength(1);
  });
});

// ----------------------------------------------------------------------------- a command's arguments

describe("a command's arguments are the ones the code and the hand-over use (items 4, 12 and 13)", () => {
  const ENVIRONMENTS = readdirSync(join(ROOT, 'infra', 'env'))
    .filter((f) => f.endsWith('.pipeline.json'))
    .map((f) => f.replace('.pipeline.json', ''));

  /** The file `npm run partner-document` writes in docs/deploy.md, `$env` standing for each environment. */
  const handedOver = () => {
    const out = /npm run partner-document[^]*?--out "([^"]+)"/.exec(read('docs/deploy.md'))?.[1] ?? '';
    return ENVIRONMENTS.map((env) => out.replace('$env', env));
  };
  const generatorInput = (guide: string) => /^npx openapi-typescript@\S+ (\S+) --output \S+$/m.exec(guide)?.[1];

  test("partners.md's generator reads a file the lender hands over (openapi.<env>.yaml)", () => {
    expect(handedOver()).toEqual(['openapi.dev.yaml', 'openapi.prod.yaml']);
    expect(handedOver()).toContain(generatorInput(read('docs/partners.md')));
    expect(handedOver()).not.toContain(generatorInput('npx openapi-typescript@7.13.0 draw-requests.yaml --output schema.ts'));
  });

  /** Each `githubSettings.cjs apply` a document gives for an environment whose reviewers the script requires, without `--reviewer-team`. */
  function applyWithoutReviewers(text: string): string[] {
    const script = read('scripts/githubSettings.cjs');
    expect(script).toMatch(/requiredReviewers && [^\n]*'--reviewer-team'/); // apply refuses without it
    const needs = (env: string) =>
      env.startsWith('<') || (JSON.parse(read(`infra/env/${env}.pipeline.json`)) as { requiredReviewers?: boolean }).requiredReviewers === true;
    return [...text.matchAll(/githubSettings\.cjs apply (\S+)([^`\n]*)/g)]
      .filter((m) => needs(m[1].replace(/[`,.;)]+$/, '')) && !m[2].includes('--reviewer-team'))
      .map((m) => m[0]);
  }

  test('every `githubSettings.cjs apply` for prod (or any environment) gives --reviewer-team, which apply requires there', () => {
    const all = documents().filter(({ file }) => file.endsWith('.md'));
    expect(all.flatMap(({ text }) => [...text.matchAll(/githubSettings\.cjs apply/g)]).length).toBeGreaterThan(2);
    expect(all.flatMap(({ file, text }) => applyWithoutReviewers(text).map((c) => `${file}: ${c}`))).toEqual([]);
    expect(applyWithoutReviewers('`node scripts/githubSettings.cjs apply <env>` makes the environments')).toHaveLength(1);
  });

  /** The loans of the curl `npm start` prints (dev/devHost.ts), and of a file of examples/. */
  const curlLoans = () => [...(/const post = `curl [^`]*/.exec(read('dev/devHost.ts'))?.[0] ?? '').matchAll(/"loanNumber":(\d+)/g)].map((m) => Number(m[1]));
  const fileLoans = (file: string) => (JSON.parse(read(file)) as { loanNumber: number | string }[]).map((d) => Number(d.loanNumber));

  /** What is wrong with the answer contributing.md's first `npm run example -- <file>` says it gets after the printed curl. */
  function exampleAnswerProblems(guide: string): string[] {
    const line = /^npm run example -- (examples\/\S+\.json)\s+#\s*(.+)$/m.exec(guide);
    if (line === null) return ['no example command with its answer'];
    const overlap = fileLoans(line[1]).some((loan) => curlLoans().includes(loan));
    // The printed curl draws its loan first: a file naming it is refused (400) after the curl, accepted (204) only before.
    if (overlap && !(/\b400\b/.test(line[2]) && /\bcurl\b/.test(line[2])))
      return [`${line[1]} names a loan the printed curl draws: "${line[2]}" does not say 400 after it`];
    if (!overlap && !/\b204\b/.test(line[2])) return [`${line[1]}: "${line[2]}" does not say 204`];
    return [];
  }

  test("contributing.md's example says the answer it gets after npm start's printed curl", () => {
    expect(curlLoans().length).toBeGreaterThan(0);
    expect(exampleAnswerProblems(read('docs/contributing.md'))).toEqual([]);
    expect(exampleAnswerProblems('npm run example -- examples/draws.json   # 204, both rows accepted; prints its Idempotency-Key')).toHaveLength(1);
  });
});

// ----------------------------------------------------------------------------- what a workflow or a step does

describe('what the pipeline and the deployment do (items 9, 10 and 11)', () => {
  /** The events deploy.yml's jobs that run a what-if are started by. */
  function whatIfEvents(): string[] {
    const workflow = parse(read('.github/workflows/deploy.yml')) as {
      on: Record<string, unknown>;
      jobs: Record<string, { if?: string; steps?: { run?: string }[] }>;
    };
    const jobs = Object.values(workflow.jobs).filter((j) => (j.steps ?? []).some((s) => (s.run ?? '').includes('--what-if')));
    expect(jobs.length).toBeGreaterThan(0);
    return Object.keys(workflow.on).filter((event) =>
      jobs.some((j) => j.if === undefined || !/github\.event_name == '(\w+)'/.test(j.if) || j.if.includes(`'${event}'`)),
    );
  }
  /** Sentences placing a what-if on pull requests, not denying it. */
  const whatIfOnPullRequests = (found: readonly { file: string; s: string }[]) =>
    found.filter(
      ({ s }) =>
        /\bwhat-if on (?:each |every |the )?pull requests?\b|\bpull requests?\b[^.]{0,30}\bwhat-if\b/i.test(s) &&
        !/\bno (?:Azure )?what-if\b|\bruns no what-if\b|\bnot\b|\bnever\b|\bno role\b/i.test(s),
    );

  test('the what-if runs on a push to main only, and no document puts it on pull requests', () => {
    expect(whatIfEvents()).toEqual(['push']);
    expect(whatIfOnPullRequests(everySentence()).map(({ file, s }) => `${file}: ${s}`)).toEqual([]);
    expect(
      whatIfOnPullRequests([
        { file: 'deploy', s: '| `.github/workflows/deploy.yml` | build, test, package; what-if on pull requests; dev then prod on main |' },
      ]),
    ).toHaveLength(1);
  });

  /** Sentences saying the smoke check writes nothing. */
  const smokeWritesNothing = (found: readonly { file: string; s: string }[]) =>
    found.filter(({ s }) => /\bNothing is written\b|\bwrites nothing\b|\btakes no key\b/i.test(s) && /\bsmoke\b|\bthe batch names the loan twice\b/i.test(s));

  test('the smoke request sends a key and a refused keyed batch writes its refusal, so no document says the smoke check writes nothing', () => {
    expect(read('scripts/smokeCheck.cjs')).toMatch(/'Idempotency-Key'/);
    expect(read('lib/keyedBatch.ts')).toMatch(/this\.store\.markRefused\(/);
    expect(smokeWritesNothing(everySentence()).map(({ file, s }) => `${file}: ${s}`)).toEqual([]);
    expect(
      smokeWritesNothing([
        { file: 'deploy', s: 'Nothing is written: the batch names the loan twice, so the draw rules refuse it, and a refused batch takes no key.' },
      ]),
    ).toHaveLength(1);
  });

  /** The kinds of trigger functions/main.ts registers (`app.http`, `app.timer` …). */
  const triggers = () => [...new Set([...read('functions/main.ts').matchAll(/^app\.(\w+)\(/gm)].map((m) => m[1]))].sort();
  /** Sentences naming the app's only trigger, where the code registers others. */
  const onlyTriggerClaims = (found: readonly { file: string; s: string }[], kinds: readonly string[]) =>
    found.filter(({ s }) => /\bonly (?:an? |its )?HTTP trigger\b|\bone trigger is HTTP\b/i.test(s) && kinds.some((k) => k !== 'http'));

  test("the host needs no queue or table role: no trigger uses one, and no document names the app's triggers otherwise than functions/main.ts registers them", () => {
    const kinds = triggers();
    expect(kinds).toContain('http');
    expect(kinds.filter((k) => /queue|table|cosmos|serviceBus|eventHub|storage/i.test(k))).toEqual([]);
    expect(read('docs/deploy.md')).toContain('The host gets no queue or table role: no trigger of the app uses a queue or a table.');
    expect(onlyTriggerClaims(everySentence(), kinds).map(({ file, s }) => `${file}: ${s}`)).toEqual([]);
    expect(
      onlyTriggerClaims([{ file: 'deploy', s: 'The host gets no queue or table role: the app has only an HTTP trigger.' }], ['http', 'timer']),
    ).toHaveLength(1);
  });
});

describe('what the lender hands a partner is what the platform team hands over (item 5)', () => {
  const normalise = (item: string) =>
    item
      .replace(/\([^)]*\)/g, '')
      .replace(/, with .*$/, '')
      .replace(/[`.;]/g, '')
      .replace(/\s+/g, ' ')
      .trim()
      .toLowerCase();
  /** The items of the partners' onboarding checklist, "Receive, for each environment". */
  const received = (guide: string) =>
    (/\*\*Receive, for each environment\*\*: ([^]*?)(?=\n\d+\. )/.exec(guide)?.[1] ?? '').replace(/\s+/g, ' ').split('; ').map(normalise);
  const handedOver = () => tableRows(read('docs/deploy.md'), /^\| Partner receives \| From \|$/).map(([item]) => normalise(item));

  test("each item the partners' checklist promises is a row of deploy.md's hand-over, with where it comes from, and the other way round", () => {
    expect(received(read('docs/partners.md')).length).toBeGreaterThan(5);
    expect([...received(read('docs/partners.md'))].sort()).toEqual([...handedOver()].sort());
  });

  test('the check can fail: the loans to try in development, which nobody hands over', () => {
    const before = read('docs/partners.md').replace('your client id;', 'your client id; which loan numbers you may try draws on in development;');
    expect(received(before).filter((item) => !handedOver().includes(item))).toEqual(['which loan numbers you may try draws on in development']);
  });
});
