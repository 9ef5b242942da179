/**
 * docs/deploy.md, "Identities" (issue #40), against what decides it: each identity's roles are the role
 * assignments infra/ declares for it (evaluated from the Bicep), the pipeline's identities are obtainable
 * only by the workflow and ref their federated credentials name (evaluated from the bootstrap) and that
 * workflow's job signs in with them (.github/workflows), and what the app, the stop identity and on-call's
 * group may do to the tables is no more than what their code does to them (the table operations of
 * lib/store.ts, scripts/stopClient.cjs and the runbook's commands, as Microsoft's "Permissions for calling
 * data operations" authorizes them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { BicepFile } from '../support/bicepEvaluation';
import { BUILT_IN_ROLES } from '../support/builtInRoles';
import { azCallsOf, optionOf } from '../support/docCommands';
import { tableRows } from '../support/markdown';
import { bootstrapCredentials } from '../support/oidcTrust';
import {
  assignmentsOf,
  bootstrapRole,
  builtInTableRoles,
  grants,
  tableOperations,
  type Assignment,
  type Permission,
  type TableOperation,
} from '../support/tableRbac';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const DEPLOY_MD = read('docs/deploy.md');
const ENV = 'prod';
/** Stand-ins for the ids of the bootstrap's custom roles (GUIDs: the modules want 36 characters), by the role's symbol there. */
const CUSTOM_ROLES: Record<string, string> = {
  lockRole: '5ca1ab1e-0000-4000-8000-00000000010c',
  whatIfRole: '5ca1ab1e-0000-4000-8000-000000000f1f',
  stopRole: '5ca1ab1e-0000-4000-8000-000000005709',
  recordsRole: '5ca1ab1e-0000-4000-8000-00000000ec02',
  keysRole: '5ca1ab1e-0000-4000-8000-00000000ce15',
};
/** The table of docs/deploy.md, "Identities", by the identity's short name (its first word). */
function identityRows(text = DEPLOY_MD): Record<string, { mayDo: string; needs: string; obtainedBy: string }> {
  const section = text.slice(/\n## (?:\d+\. )?Identities\n/.exec(text)?.index ?? -1);
  const rows = tableRows(section, /^\| Identity \| May do \| What its job needs \| Who can obtain it \|$/);
  return Object.fromEntries(rows.map(([identity, mayDo, needs, obtainedBy]) => [identity.split(/[ ']/)[0], { mayDo, needs, obtainedBy }]));
}

// ----------------------------------------------------------------------------- column 2: what each identity may do

/** The scope words of the table, and the scopes of the evaluated assignments they stand for. */
const SCOPES: Record<string, string> = {
  'the account': 'Microsoft.Storage/storageAccounts st',
  'the component': 'Microsoft.Insights/components appi',
  'the workspace': 'Microsoft.OperationalInsights/workspaces log',
  'the workbook': 'Microsoft.Insights/workbooks wb',
  'the group': 'Microsoft.Resources/resourceGroups the group',
};
const TABLE_NAMES = {
  partnersTableName: 'Partners',
  loansTableName: 'Loans',
  drawsTableName: 'DrawRequests',
  idempotencyTableName: 'IdempotencyKeys',
  stoppedClientsTableName: 'StoppedClients',
};
const scopeOfWords = (words: string): string =>
  /^`(\w+)`$/.test(words)
    ? `Microsoft.Storage/storageAccounts/tableServices/tables ${words.replace(/`/g, '')}`
    : (SCOPES[words] ?? `an unknown scope: ${words}`);

/**
 * A "May do" cell as `role → scope` grants: `Role` on <scope>, <scope> and <scope>; several roles before one
 * "on" share it ("`A`, `B` and `C` on the group"); a role's parenthesis is a remark. Microsoft Graph
 * permissions are `graph: <permission>`.
 */
function grantsOf(cell: string): string[] {
  return cell.split('; ').flatMap((part) => {
    const graph = /^Microsoft Graph (.+)$/.exec(part);
    if (graph) return [...graph[1].matchAll(/`([\w.]+)`/g)].map((m) => `graph: ${m[1]}`);
    const at = part.lastIndexOf(' on ');
    const roles = [
      ...part
        .slice(0, at)
        .replace(/\([^)]*\)/g, '')
        .matchAll(/`([^`]+)`/g),
    ].map((m) => m[1]);
    const scopes = part
      .slice(at + 4)
      .replace(/:.*$/, '')
      .split(/, | and /)
      .map(scopeOfWords);
    return roles.flatMap((role) => scopes.map((scope) => `${role} → ${scope}`));
  });
}

/** Role definition id → name: the built-in roles, and the bootstrap's custom roles (the module parameters below pass their symbols). */
async function roleNames(): Promise<Record<string, string>> {
  const bootstrap = await BicepFile.load(join(ROOT, 'infra', 'bootstrap.bicep'), {
    environmentName: ENV,
    githubRepository: 'octo-org/octo-repo',
    githubOwnerId: '123',
    githubRepositoryId: '456',
  });
  const custom = Object.fromEntries(
    bootstrap
      .declared('Microsoft.Authorization/roleDefinitions')
      .map((symbol) => [CUSTOM_ROLES[symbol], String(bootstrap.propertyText(symbol, 'properties.roleName')).replace(/^'|( \(\$\{.*)?'$/g, '')]),
  );
  return { ...BUILT_IN_ROLES, ...custom };
}

const TABLES_OF = (...names: Array<keyof typeof TABLE_NAMES>) => Object.fromEntries(names.map((n) => [n, TABLE_NAMES[n]]));
/** The parameters each module is evaluated with: the tables it takes, the custom roles' stand-in ids. */
const APP = {
  principalId: 'app',
  storageAccountName: 'st',
  appInsightsName: 'appi',
  recordsRoleId: CUSTOM_ROLES.recordsRole,
  keysRoleId: CUSTOM_ROLES.keysRole,
  ...TABLE_NAMES,
};
const WRITER = {
  principalId: 'deploy',
  principalType: 'ServicePrincipal',
  storageAccountName: 'st',
  ...TABLES_OF('partnersTableName', 'stoppedClientsTableName'),
};
const STOPPER = {
  principalId: 'stop',
  stopRoleId: CUSTOM_ROLES.stopRole,
  storageAccountName: 'st',
  ...TABLES_OF('partnersTableName', 'stoppedClientsTableName'),
};
const ON_CALL = {
  groupObjectId: '6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  storageAccountName: 'st',
  appInsightsName: 'appi',
  workspaceName: 'log',
  workbookName: 'wb',
  ...TABLES_OF('partnersTableName', 'drawsTableName', 'stoppedClientsTableName'),
};
/** What infra/ grants each identity, as `role → scope`, evaluated from each module for these parameters. */
async function infraGrants(): Promise<Record<string, string[]>> {
  const names = await roleNames();
  const text = (assignments: Assignment[], principal: RegExp) =>
    assignments.filter((a) => principal.test(a.principalId)).map((a) => `${names[a.roleId] ?? a.roleId} → ${a.scope.type} ${a.scope.name}`);
  const pipeline = await assignmentsOf('pipelineIdentities', {
    baseName: `drawreq-${ENV}`,
    location: 'eastus',
    githubRepository: 'octo-org/octo-repo',
    githubOwnerId: '123',
    githubRepositoryId: '456',
    githubSubjectFormat: 'both',
    environmentName: ENV,
    lockRoleId: CUSTOM_ROLES.lockRole,
    whatIfRoleId: CUSTOM_ROLES.whatIfRole,
    stopRoleId: CUSTOM_ROLES.stopRole,
    recordsRoleId: CUSTOM_ROLES.recordsRole,
    keysRoleId: CUSTOM_ROLES.keysRole,
  });
  // Microsoft Graph's application permissions by id (Microsoft Graph permissions reference), as the bootstrap grants them.
  const GRAPH: Record<string, string> = {
    '18a4783c-866b-4cc7-a460-3d5e5662c884': 'Application.ReadWrite.OwnedBy',
    '9a5d68dd-52b0-4cc2-bd40-abcf44ac3a30': 'Application.Read.All',
    '06b708a9-e830-4db3-a914-8e69da51d44f': 'AppRoleAssignment.ReadWrite.All',
  };
  const bootstrap = read('infra/bootstrap.bicep');
  const graphIds = [...(/var graphPermissions = \{([^}]*)\}/.exec(bootstrap)?.[1].matchAll(/'([0-9a-f-]{36})'/g) ?? [])].map((m) => m[1]);
  return {
    app: text(await assignmentsOf('roleAssignments', APP), /^principalId$/),
    deploy: [
      ...text(pipeline, /^deploy\./),
      ...text(await assignmentsOf('partnersWriter', WRITER), /^principalId$/),
      ...graphIds.map((id) => `graph: ${GRAPH[id] ?? id}`),
    ],
    plan: text(pipeline, /^plan\./),
    stop: [...text(pipeline, /^stop\./), ...text(await assignmentsOf('stopAccess', STOPPER), /^principalId$/)],
    'on-call': text(await assignmentsOf('onCallAccess', ON_CALL), /^groupObjectId$/),
  };
}

describe('docs/deploy.md, "Identities": one row per identity', () => {
  test('the five identities, each row filled', () => {
    const rows = identityRows();
    expect(Object.keys(rows)).toEqual(['app', 'deploy', 'plan', 'stop', 'on-call']);
    for (const [identity, row] of Object.entries(rows))
      expect({ identity, empty: Object.values(row).filter((cell) => cell === '').length }).toEqual({ identity, empty: 0 });
  });

  test("what each may do is exactly what infra/ grants it: every role at every scope, the deploy identity's Graph permissions included", async () => {
    const rows = identityRows();
    const infra = await infraGrants();
    for (const identity of Object.keys(rows))
      expect({ identity, grants: grantsOf(rows[identity].mayDo).sort() }).toEqual({ identity, grants: infra[identity].sort() });
  });

  test('the migration\'s role-assignment deletes remove grants infra/ no longer declares, and none it does (docs/deploy.md, "Migration")', async () => {
    const account = '/subscriptions/s/resourceGroups/rg-drawreq-prod/providers/Microsoft.Storage/storageAccounts/st';
    const calls = azCallsOf(
      '## Migration of an existing environment',
      'role assignment delete',
      { env: ENV, stopPrincipalId: 'stop', onCallGroupObjectId: 'on-call' },
      { 'storage account': account, 'identity show': 'app' },
    );
    const deletes = calls
      .filter((args) => args.slice(0, 3).join(' ') === 'role assignment delete')
      .map((args) => {
        const scope = optionOf(args, '--scope') ?? '';
        const table = /\/tableServices\/default\/tables\/(\w+)$/.exec(scope)?.[1];
        const on =
          table === undefined
            ? `Microsoft.Storage/storageAccounts ${scope.split('/').pop()}`
            : `Microsoft.Storage/storageAccounts/tableServices/tables ${table}`;
        expect(scope.startsWith(account)).toBe(true);
        return [optionOf(args, '--assignee') ?? '', `${optionOf(args, '--role')} → ${on}`];
      });
    expect(deletes.map(([who, grant]) => `${who}: ${grant}`).sort()).toEqual([
      'app: Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables DrawRequests',
      'app: Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables IdempotencyKeys',
      'on-call: Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables Partners',
      'on-call: Storage Table Data Reader → Microsoft.Storage/storageAccounts st',
      'stop: Storage Table Data Contributor → Microsoft.Storage/storageAccounts/tableServices/tables Partners',
    ]);
    const infra = await infraGrants();
    for (const [who, grant] of deletes) expect({ who, grant, declared: infra[who].includes(grant) }).toEqual({ who, grant, declared: false });
    // The check can fail: a delete of a grant infra/ still declares is seen.
    expect(infra.stop).toContain('Storage Table Data Reader → Microsoft.Storage/storageAccounts/tableServices/tables Partners');
  });

  test('the check can fail: a role left out, a scope widened, a role the module does not grant', async () => {
    const infra = await infraGrants();
    const stop = identityRows().stop.mayDo;
    expect(grantsOf(stop.replace('; `Storage Table Data Reader` on `Partners`', '')).sort()).not.toEqual(infra.stop.sort());
    expect(grantsOf(stop.replace('on `StoppedClients`', 'on the account')).sort()).not.toEqual(infra.stop.sort());
    expect(grantsOf(`${stop}; \`Storage Table Data Contributor\` on \`Partners\``).sort()).not.toEqual(infra.stop.sort());
  });
});

// ----------------------------------------------------------------------------- column 4: who can obtain it

describe('who can obtain each identity: the workflow and ref its credentials name, whose job signs in with it', () => {
  type Workflow = { jobs: Record<string, { environment?: string; steps?: { uses?: string; with?: Record<string, string> }[] }> };
  const workflow = (file: string) => parse(read(`.github/workflows/${file}`)) as Workflow;

  test.each(['deploy', 'plan', 'stop'])(
    '%s: its row names the file, the ref and the environment its credentials name, and that file has the one job that signs in as it there',
    async (identity) => {
      const row = identityRows()[identity].obtainedBy;
      const named =
        /^`\.github\/workflows\/([\w-]+\.yml)` on `(refs\/heads\/\w+)`, its (?:`([\w-]+)` )?job(?:,)? (?:in the GitHub environment `([^`]+)`|in no environment)/.exec(
          row,
        );
      expect(named).not.toBeNull();
      const [, file, ref, , environment] = named as RegExpExecArray;
      for (const env of ['dev', 'prod']) {
        const credentials = (
          await bootstrapCredentials({ environmentName: env, githubRepository: 'octo-org/octo-repo', githubOwnerId: '123', githubRepositoryId: '456' })
        ).filter((c) => c.identity === `id-drawreq-${env}-${identity}`);
        const context = environment === undefined ? `ref:${ref}` : `environment:${environment.replace('<env>', env)}`;
        expect(credentials.map((c) => c.subject.replace(/^repo:[^:]+:/, ''))).toEqual(
          Array(2).fill(`${context}:ref:${ref}:job_workflow_ref:octo-org/octo-repo/.github/workflows/${file}@${ref}`),
        );
      }
      const signIns = Object.entries(workflow(file).jobs).flatMap(([name, job]) =>
        (job.steps ?? [])
          .filter((s) => s.uses?.startsWith('azure/login@') && s.with?.['client-id']?.includes(`${identity}ClientId`))
          .map(() => [name, job.environment]),
      );
      expect(signIns.length).toBeGreaterThan(0);
      for (const [, jobEnvironment] of signIns)
        expect(jobEnvironment?.replace('${{ inputs.environment }}', '<env>').replace('${{ matrix.environment }}', '<env>')).toBe(environment);
    },
  );

  test("the app has no federated credential (only the function app it is assigned to holds it); on-call's group is its members", () => {
    expect(read('infra/modules/identity.bicep')).not.toMatch(/federatedIdentityCredentials/);
    expect(identityRows().app.obtainedBy).toMatch(/no federated credential/);
    expect(read('infra/modules/onCallAccess.bicep')).not.toMatch(/principalType: '(?!Group)/);
    expect(identityRows()['on-call'].obtainedBy).toMatch(/^the members of the group/);
  });
});

// ----------------------------------------------------------------------------- column 2 never exceeds column 3: the tables

/**
 * What each identity's code does to the tables, as Table service operations: the app's from lib/store.ts
 * (its point reads, the draws' transaction of inserts, the key's insert and its replace), the stop
 * identity's from scripts/stopClient.cjs (its SDK calls), on-call's from the runbook's commands.
 */
function appOperations(): Record<string, TableOperation[]> {
  const store = read('lib/store.ts');
  const tableOf = Object.fromEntries([...store.matchAll(/this\.(\w+) = client\(config\.(\w+),/g)].map((m) => [m[1], m[2].replace(/Table$/, 'TableName')]));
  const name = (client: string) => (TABLE_NAMES as Record<string, string>)[tableOf[client]];
  const ops: Array<[string, TableOperation]> = [
    ...[...store.matchAll(/this\.pointRead\(signal, this\.(\w+)/g)].map((m): [string, TableOperation] => [name(m[1]), 'Query Entities']),
    ...[...store.matchAll(/this\.(\w+)\s*\.listEntities/g)].map((m): [string, TableOperation] => [name(m[1]), 'Query Entities']),
    // The draws' transaction is of creates only; the key's rows' transactions insert or replace (writeOver).
    ...[...store.matchAll(/this\.(\w+)\.submitTransaction/g)].flatMap((m): Array<[string, TableOperation]> =>
      m[1] === 'drawsCommit'
        ? [[name(m[1]), 'Insert Entity']]
        : [
            [name(m[1]), 'Insert Entity'],
            [name(m[1]), 'Update Entity'],
          ],
    ),
    ...[...store.matchAll(/this\.(\w+)\.createEntity/g)].map((m): [string, TableOperation] => [name(m[1]), 'Insert Entity']),
    ...[...store.matchAll(/this\.(\w+)\.updateEntity\([^)]*'Replace'/g)].map((m): [string, TableOperation] => [name(m[1]), 'Update Entity']),
    ...[...store.matchAll(/this\.(\w+)\.deleteEntity\(/g)].map((m): [string, TableOperation] => [name(m[1]), 'Delete Entity']),
  ];
  // The draws' transaction creates only; the key's rows are created or replaced; no call the list above does not read.
  expect([...store.matchAll(/TransactionAction\[\] = [^;]*\['(\w+)'/g)].map((m) => m[1])).toEqual(['create']);
  expect([...store.matchAll(/\['(\w+)', entity/g)].map((m) => m[1])).toEqual(['create', 'update']);
  expect(store).not.toMatch(/\.(upsertEntity|deleteTable|createTable)\(/);
  return group(ops);
}
function scriptOperations(script: string, tables: Record<string, string>): Record<string, TableOperation[]> {
  const text = read(script).replace(/^\s*#.*$/gm, '');
  return group(
    [...text.matchAll(/az storage entity (show|insert|query)\b[^\n]*?--table-name "?\$?(\w+)"?([^\n]*)/g)].map(
      ([, verb, table, rest]): [string, TableOperation] => [
        tables[table] ?? table,
        verb === 'insert' ? (/--if-exists (merge|replace)/.test(rest) ? 'Insert Or Replace Entity' : 'Insert Entity') : 'Query Entities',
      ],
    ),
  );
}
/** scripts/stopClient.cjs's table calls (@azure/data-tables' getEntity, a Query Entities; createEntity, an Insert Entity), by table. */
function stopOperations(tables: Record<string, string>): Record<string, TableOperation[]> {
  const operation: Record<string, TableOperation> = { getEntity: 'Query Entities', createEntity: 'Insert Entity' };
  return group(
    [...read('scripts/stopClient.cjs').matchAll(/new TableClient\(url, (\w+), credential, options\)\.(\w+)\(/g)].map(
      ([, table, method]): [string, TableOperation] => [
        tables[table] ?? table,
        operation[method] ?? (`${method}: not a Table service operation this test knows` as TableOperation),
      ],
    ),
  );
}
function group(ops: Array<[string, TableOperation]>): Record<string, TableOperation[]> {
  const byTable: Record<string, TableOperation[]> = {};
  for (const [table, op] of ops) byTable[table] = [...new Set([...(byTable[table] ?? []), op])].sort();
  return byTable;
}

/**
 * The actions a table operation needs: the first of Microsoft's sets for it made only of the narrow
 * data actions (add, update, read, delete), not `entities/write`, which covers them all.
 */
const neededActions = (op: TableOperation): string[] => [
  ...(tableOperations()[op].find((set) => set.every((a) => !a.endsWith('/entities/write'))) ?? tableOperations()[op][0]),
];

/**
 * What the roles allow on each table, as the actions that read or change its rows or create or delete it:
 * every entity data action, and the table's own write and delete. (Listing the account's table names,
 * `tables/read`, is not counted: every built-in table data role carries it, and it reads no row.)
 */
const ROW_AND_TABLE_ACTIONS = [
  ...new Set([...Object.values(tableOperations()).flatMap((sets) => sets.flat()), 'Microsoft.Storage/storageAccounts/tableServices/tables/entities/delete']),
];
function allowedActions(assignments: readonly Assignment[], roles: Record<string, Permission[]>, table: string): string[] {
  const held = assignments
    .filter((a) => (a.scope.type.endsWith('/tables') && a.scope.name === table) || a.scope.type === 'Microsoft.Storage/storageAccounts')
    .flatMap((a) => roles[a.roleId] ?? []);
  return ROW_AND_TABLE_ACTIONS.filter((action) => grants(held, action))
    .filter((action) => !action.endsWith('/entities/write') || held.some((p) => p.dataActions.some((d) => d.endsWith('/entities/write'))))
    .sort();
}

describe('nothing the app, the stop identity or on-call may do to a table is more than its code does (docs/deploy.md, "Identities": column 2 within column 3)', () => {
  const TABLES = Object.values(TABLE_NAMES);
  async function roles(): Promise<Record<string, Permission[]>> {
    return {
      ...Object.fromEntries(Object.entries(builtInTableRoles()).map(([id, role]) => [id, role.permissions])),
      [CUSTOM_ROLES.stopRole]: await bootstrapRole('stopRole'),
      [CUSTOM_ROLES.recordsRole]: await bootstrapRole('recordsRole'),
      [CUSTOM_ROLES.keysRole]: await bootstrapRole('keysRole'),
    };
  }
  const needed = (operations: Record<string, TableOperation[]>, table: string) => [...new Set((operations[table] ?? []).flatMap(neededActions))].sort();

  async function check(assignments: Assignment[], operations: Record<string, TableOperation[]>) {
    const allRoles = await roles();
    return Object.fromEntries(TABLES.map((table) => [table, { allowed: allowedActions(assignments, allRoles, table), needed: needed(operations, table) }]));
  }

  test("the app: its roles allow exactly the actions lib/store.ts's reads, inserts and replaces need, table by table", async () => {
    const operations = appOperations();
    expect(operations).toEqual({
      Partners: ['Query Entities'],
      StoppedClients: ['Query Entities'],
      Loans: ['Query Entities'],
      DrawRequests: ['Insert Entity', 'Query Entities'],
      IdempotencyKeys: ['Insert Entity', 'Query Entities', 'Update Entity'],
    });
    const assignments = await assignmentsOf('roleAssignments', APP);
    const result = await check(assignments, operations);
    for (const [table, { allowed, needed: need }] of Object.entries(result)) expect({ table, allowed }).toEqual({ table, allowed: need });
  });

  test('the stop identity: exactly what scripts/stopClient.cjs does, a read of Partners and an insert into the stop list', async () => {
    const operations = stopOperations({ partners: 'Partners', stops: 'StoppedClients' });
    expect(operations).toEqual({ Partners: ['Query Entities'], StoppedClients: ['Insert Entity'] });
    const result = await check(await assignmentsOf('stopAccess', STOPPER), operations);
    for (const [table, { allowed, needed: need }] of Object.entries(result)) expect({ table, allowed }).toEqual({ table, allowed: need });
  });

  test("on-call's group: the reads of the runbook's commands, no more", async () => {
    const operations = scriptOperations('docs/runbook.md', {});
    expect(Object.keys(operations).sort()).toEqual(['DrawRequests', 'Partners', 'StoppedClients']);
    const result = await check(await assignmentsOf('onCallAccess', ON_CALL), operations);
    for (const [table, { allowed, needed: need }] of Object.entries(result)) expect({ table, allowed }).toEqual({ table, allowed: need });
  });

  test('the deploying identity can do what scripts/deploy.sh does to the tables (its reach is wider by design: docs/deploy.md says so)', async () => {
    const operations = scriptOperations('scripts/deploy.sh', { table: 'Partners', stops: 'StoppedClients', account: 'Partners' });
    const deletes = /az storage entity delete [^\n]*--table-name "\$stops"/.test(read('scripts/deploy.sh'));
    expect(deletes).toBe(true);
    const result = await check(await assignmentsOf('partnersWriter', WRITER), {
      ...operations,
      StoppedClients: [...(operations.StoppedClients ?? []), 'Delete Entity'],
    });
    for (const [table, { allowed, needed: need }] of Object.entries(result))
      expect({ table, missing: need.filter((a) => !allowed.includes(a)) }).toEqual({ table, missing: [] });
    expect(identityRows().deploy.needs).toMatch(/exceed any one step by design/);
  });

  test('the check can fail: Storage Table Data Contributor in place of the stop-list role allows far more than the script does', async () => {
    const contributor = Object.entries(BUILT_IN_ROLES).find(([, name]) => name === 'Storage Table Data Contributor')?.[0] as string;
    const wide = await assignmentsOf('stopAccess', { ...STOPPER, stopRoleId: contributor });
    const result = await check(wide, { StoppedClients: ['Insert Entity'] });
    expect(result.StoppedClients.allowed).toEqual(
      expect.arrayContaining([
        'Microsoft.Storage/storageAccounts/tableServices/tables/delete',
        'Microsoft.Storage/storageAccounts/tableServices/tables/entities/delete',
        'Microsoft.Storage/storageAccounts/tableServices/tables/entities/update/action',
      ]),
    );
  });
});
