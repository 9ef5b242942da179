/**
 * What an identity may do to the tables, as Azure decides it, from the role assignments infra/ declares:
 *   - the roles: the built-in Table storage data roles as Microsoft defines them
 *     (tests/fixtures/azure-role-definitions/storage-table.json) and the custom roles infra/bootstrap.bicep
 *     defines, evaluated from the Bicep (tests/support/bicepEvaluation.ts);
 *   - the assignments: each role assignment of a module, evaluated for given parameters, with its scope;
 *   - the operations: Microsoft's "Permissions for calling data operations" for the Table service (the same
 *     fixture): an operation is allowed when every action of one of its sets is granted at the table or an
 *     enclosing scope, by a role's `actions` minus `notActions` or `dataActions` minus `notDataActions`.
 * Action patterns match as Azure RBAC matches them: case-insensitive, `*` standing for any text.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BicepFile, ResourceRef, type Value } from './bicepEvaluation';

const INFRA = join(__dirname, '..', '..', 'infra');
const FIXTURE = join(__dirname, '..', 'fixtures', 'azure-role-definitions', 'storage-table.json');

export interface Permission {
  readonly actions: readonly string[];
  readonly notActions: readonly string[];
  readonly dataActions: readonly string[];
  readonly notDataActions: readonly string[];
}

export type TableOperation =
  | 'Query Entities'
  | 'Insert Entity'
  | 'Insert Or Merge Entity'
  | 'Insert Or Replace Entity'
  | 'Update Entity'
  | 'Merge Entity'
  | 'Delete Entity'
  | 'Create Table'
  | 'Delete Table';

interface Fixture {
  readonly operations: Record<TableOperation, readonly (readonly string[])[]> & { source?: unknown };
  readonly roles: readonly { readonly name: string; readonly roleName: string; readonly permissions: readonly Partial<Permission>[] }[];
}
const fixture = (): Fixture => JSON.parse(readFileSync(FIXTURE, 'utf8')) as Fixture;

/** Microsoft's table of the actions each Table service operation needs (any one set of them). */
export function tableOperations(): Record<TableOperation, readonly (readonly string[])[]> {
  const operations: Record<string, unknown> = { ...fixture().operations };
  delete operations.source;
  return operations as Record<TableOperation, readonly (readonly string[])[]>;
}
const TABLE_OPERATION_NAMES = Object.keys(tableOperations()) as TableOperation[];

const complete = (p: Partial<Permission>): Permission => ({
  actions: p.actions ?? [],
  notActions: p.notActions ?? [],
  dataActions: p.dataActions ?? [],
  notDataActions: p.notDataActions ?? [],
});

/** The built-in Table storage data roles, by role definition id (a GUID). */
export function builtInTableRoles(): Record<string, { roleName: string; permissions: Permission[] }> {
  return Object.fromEntries(fixture().roles.map((r) => [r.name, { roleName: r.roleName, permissions: r.permissions.map(complete) }]));
}

/** A custom role infra/bootstrap.bicep defines (by its resource symbol): its permissions, evaluated from the Bicep. */
export async function bootstrapRole(symbol: string): Promise<Permission[]> {
  const bootstrap = await BicepFile.load(join(INFRA, 'bootstrap.bicep'), {
    environmentName: 'dev',
    githubRepository: 'octo-org/octo-repo',
    githubOwnerId: '123',
    githubRepositoryId: '456',
  });
  return (bootstrap.property(symbol, 'properties.permissions') as Partial<Permission>[]).map(complete);
}

/** Azure RBAC's match of an action against a pattern: case-insensitive, `*` any text. */
export function actionMatches(pattern: string, action: string): boolean {
  const expression = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${expression}$`, 'i').test(action);
}

/** Whether these permissions grant `action`: a data action when it is an entity's, a control action otherwise. */
export function grants(permissions: readonly Permission[], action: string): boolean {
  const data = /\/entities\//i.test(action);
  return permissions.some((p) => {
    const [allow, deny] = data ? [p.dataActions, p.notDataActions] : [p.actions, p.notActions];
    return allow.some((a) => actionMatches(a, action)) && !deny.some((a) => actionMatches(a, action));
  });
}

export interface Assignment {
  readonly symbol: string;
  /** The principal as the template writes it (`principalId`, `deploy.properties.principalId`). */
  readonly principalId: string;
  /** The role definition's id (the last segment of roleDefinitionId). */
  readonly roleId: string;
  readonly scope: { readonly type: string; readonly name: string };
}

/** A role definition id's last segment, the role's GUID. */
function roleIdOf(roleDefinitionId: Value | undefined, where: string): string {
  if (typeof roleDefinitionId !== 'string') throw new Error(`${where}: roleDefinitionId is not a string`);
  return roleDefinitionId.split('/').pop() as string;
}

/** The role assignments a module declares, evaluated for these parameters; one without `scope` is on the module's resource group. */
export async function assignmentsOf(module: string, parameters: Record<string, Value>): Promise<Assignment[]> {
  const file = await BicepFile.load(join(INFRA, 'modules', `${module}.bicep`), parameters);
  return file.declared('Microsoft.Authorization/roleAssignments').map((symbol) => {
    const scope = file.propertyText(symbol, 'scope') === undefined ? undefined : file.property(symbol, 'scope');
    if (scope !== undefined && !(scope instanceof ResourceRef)) throw new Error(`${module}: ${symbol} has no resource scope`);
    return {
      symbol,
      principalId: file.propertyText(symbol, 'properties.principalId') ?? '',
      roleId: roleIdOf(file.property(symbol, 'properties.roleDefinitionId'), `${module}: ${symbol}`),
      scope: scope === undefined ? { type: 'Microsoft.Resources/resourceGroups', name: 'the group' } : { type: file.typeOf(scope.symbol), name: scope.name },
    };
  });
}

const TABLE = 'Microsoft.Storage/storageAccounts/tableServices/tables';
const ACCOUNT = 'Microsoft.Storage/storageAccounts';

/**
 * The operations these assignments allow on each of `tables`: a table's own assignments and those on the
 * storage account apply to it. `roles` gives each role id's permissions (an id not in it is an error).
 */
export function tableAccess(
  assignments: readonly Assignment[],
  roles: Readonly<Record<string, readonly Permission[]>>,
  tables: readonly string[],
): Record<string, TableOperation[]> {
  const operations = tableOperations();
  return Object.fromEntries(
    tables.map((table) => {
      const held = assignments
        .filter((a) => (a.scope.type === TABLE && a.scope.name === table) || a.scope.type === ACCOUNT)
        .flatMap((a) => {
          const permissions = roles[a.roleId];
          if (permissions === undefined) throw new Error(`${a.symbol}: no definition given for role ${a.roleId}`);
          return permissions;
        });
      const allowed = TABLE_OPERATION_NAMES.filter((op) => operations[op].some((set) => set.every((action) => grants(held, action))));
      return [table, allowed];
    }),
  );
}
