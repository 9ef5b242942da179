/**
 * One document per reader (issue #33), each kept to what its reader needs: the README short, with the two
 * commands first and a link to every reader's document; the partners' guide free of what only someone
 * with the repository can use, and its recommended timeout above the longest the service can take.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PROVIDER_TIMINGS } from '../../lib/auth';
import { DEFAULT_TIMEOUTS } from '../../lib/store';
import { DEFAULTS as EXAMPLE_DEFAULTS } from '../../examples/submit-draws';
import { measure } from '../../scripts/documentMetrics';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** Each `## ` section of a Markdown text, by its heading line, with code blocks included. */
function sections(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(/^## (.+)\n([^]*?)(?=^## |(?![^]))/gm)) found.set(m[1], m[2]);
  return found;
}

describe('README.md: the first page anyone reads', () => {
  const readme = read('README.md');
  const lines = readme.split('\n');

  test('is short: at most 120 lines (everything else is linked)', () => {
    expect(lines.length).toBeLessThanOrEqual(120);
  });

  test('opens with the two commands of a fresh machine: `npm ci && npm start`, then `npm test`', () => {
    const block = readme.slice(readme.indexOf('```sh\n') + 6, readme.indexOf('\n```', readme.indexOf('```sh\n')));
    expect(lines.findIndex((l) => l === '```sh')).toBeLessThan(6);
    expect(block.split('\n').map((l) => l.replace(/\s+#.*$/, ''))).toEqual(['npm ci && npm start', 'npm test']);
  });

  test('says what the service is before any command: the lines above its first command block', () => {
    const opening = readme.slice(0, readme.indexOf('```'));
    // What a reader who knows nothing needs first: what it is, for whom, and what it does with a batch.
    expect(opening).toMatch(/\bAPI\b/);
    expect(opening).toMatch(/\bpartners\b/);
    expect(opening).toMatch(/\bdraw requests\b/);
    expect(opening).toMatch(/\brecorded\b/);
  });

  test.each([
    ['partners', 'docs/partners.md'],
    ['on-call', 'docs/runbook.md'],
    ['the platform team', 'docs/deploy.md'],
    ['contributors', 'docs/contributing.md'],
    ['decisions', 'docs/decisions.md'],
    ['figures', 'bench/results.md'],
  ])('links %s to their document (%s) under “Who reads what next”', (_reader, file) => {
    const next = sections(readme).get('Who reads what next') ?? '';
    expect(next).toContain(`](${file})`);
  });

  test('holds no tables of settings or error codes: those live once, in the contract and the partners’ guide', () => {
    expect(readme).not.toMatch(/^\| Setting \|/m);
    expect(readme).not.toMatch(/^\| code \| error \|/m);
  });
});

describe("each reader's document is short (issue 49; scripts/documentMetrics.ts counts them)", () => {
  test.each([
    ['docs/partners.md', 300],
    ['docs/runbook.md', 300],
    ['docs/deploy.md', 600],
  ])('%s holds fewer than %i lines', (file, limit) => {
    expect(measure(file, read(file)).lines).toBeLessThan(limit);
  });
});

describe('docs/partners.md: what a partner without the repository needs', () => {
  const guide = read('docs/partners.md');

  test('tells a partner to run nothing of the repository: no npm scripts, no repository paths, no local run', () => {
    const repositoryOnly = guide
      .split('\n')
      .map((text, i) => ({ line: i + 1, text }))
      .filter(({ text }) =>
        /\bnpm (?:run|start|test|ci)\b|(?:^|[\s`(])(?:\.\/)?(?:lib|dev|scripts|tests|bench|infra|examples|functions|\.local|\.ci)\/|\]\((?!#|https?:|contract\.md[#)])[^)]*\)|127\.0\.0\.1|localhost/.test(
          text,
        ),
      );
    expect(repositoryOnly.map(({ line, text }) => `docs/partners.md:${line}: ${text.trim()}`)).toEqual([]);
  });

  test('the check can fail: it finds a repository command, path, relative link and local address', () => {
    const probe =
      /\bnpm (?:run|start|test|ci)\b|(?:^|[\s`(])(?:\.\/)?(?:lib|dev|scripts|tests|bench|infra|examples|functions|\.local|\.ci)\/|\]\((?!#|https?:|contract\.md[#)])[^)]*\)|127\.0\.0\.1|localhost/;
    for (const text of ['run `npm start`', 'see `lib/limits.ts`', 'the [guide](deploy.md)', 'http://127.0.0.1:7071']) expect(probe.test(text)).toBe(true);
    for (const text of [
      'see [section 5](#5-retrying-safely-idempotency-key)',
      'https://login.microsoftonline.com/<tenant-id>',
      '[contract.md §9](contract.md#9-safe-retries-idempotency-key)',
    ])
      expect(probe.test(text)).toBe(false);
  });

  test('has an onboarding checklist, a support contact, timeouts and throughput, and the OpenAPI document', () => {
    const headings = [...sections(guide).keys()];
    expect(headings).toEqual(
      expect.arrayContaining(['Onboarding checklist', '7. Support', '8. Timeouts and throughput', '9. The OpenAPI document and generated clients']),
    );
    expect(sections(guide).get('7. Support')).toMatch(/Support contact/);
  });

  /**
   * The longest the service can take, from its own bounds: two identity-provider fetches one after the
   * other (metadata, then signing keys), and the storage steps one after the other on the longest keyed
   * path (lib/keyedBatch.ts): the partner read, then the key's rows; then each judgement but the last
   * reads the rows of a batch (the key's day, or another batch's that holds the key), writes the key
   * (a take or a refusal), finds the rows changed and reads the key again; the last reads, takes, commits,
   * and reads the rows again after a lost commit.
   */
  const MAX_JUDGEMENTS = Number(/^const MAX_JUDGEMENTS = (\d+);$/m.exec(read('lib/keyedBatch.ts'))?.[1]);
  const STORAGE_STEPS = 2 + 3 * (MAX_JUDGEMENTS - 1) + 4;
  const WORST_CASE_MS = 2 * DEFAULT_PROVIDER_TIMINGS.fetchTimeoutMs + STORAGE_STEPS * Math.max(DEFAULT_TIMEOUTS.readMs, DEFAULT_TIMEOUTS.commitMs);
  /** Azure's front end ends any HTTP-triggered function's request at 230 s, whatever host.json says. */
  const PLATFORM_LIMIT_MS = 230_000;

  test('§8 states the worst case the code bounds, and recommends a client timeout above it and below the platform limit', () => {
    expect(MAX_JUDGEMENTS).toBeGreaterThan(0);
    const section = (sections(guide).get('8. Timeouts and throughput') ?? '').replace(/\s+/g, ' ');
    expect(section).toContain(`at most ${STORAGE_STEPS} in a row`);
    const stated = Number(/answers within (\d+) s\b/.exec(section)?.[1]) * 1000;
    const timeout = Number(/Client timeout: (\d+) seconds per attempt/.exec(section)?.[1]) * 1000;
    expect(stated).toBe(WORST_CASE_MS);
    expect(timeout).toBeGreaterThan(WORST_CASE_MS);
    expect(timeout).toBeLessThan(PLATFORM_LIMIT_MS);
    expect(section).toContain(`${PLATFORM_LIMIT_MS / 1000} s`);
    // Each bound it names is the code's.
    expect(section).toContain(`identity provider at ${DEFAULT_PROVIDER_TIMINGS.fetchTimeoutMs / 1000} s`);
    expect(section).toContain(`storage step at ${DEFAULT_TIMEOUTS.commitMs / 1000} s`);
    expect(DEFAULT_TIMEOUTS.readMs).toBe(DEFAULT_TIMEOUTS.commitMs);
  });

  test("the Functions host's own timeout (host.json, else Flex Consumption's default of 30 minutes) is above the worst case", () => {
    const { functionTimeout } = JSON.parse(read('host.json')) as { functionTimeout?: string };
    const [h, m, s] = (functionTimeout ?? '00:30:00').split(':').map(Number);
    expect((h * 3600 + m * 60 + s) * 1000).toBeGreaterThan(WORST_CASE_MS);
  });

  test("the example client's default timeout per attempt is the one §8 recommends", () => {
    const section = (sections(guide).get('8. Timeouts and throughput') ?? '').replace(/\s+/g, ' ');
    expect(`Client timeout: ${EXAMPLE_DEFAULTS.timeoutSeconds} seconds per attempt`).toBe(/Client timeout: \d+ seconds per attempt/.exec(section)?.[0]);
  });
});
