/** Azure built-in role definition ids and their names (Microsoft's "Azure built-in roles"; the same in every tenant). */
export const BUILT_IN_ROLES: Readonly<Record<string, string>> = {
  'b7e6dc6d-f1e8-4753-8033-0f276bb0955b': 'Storage Blob Data Owner',
  '76199698-9eea-4c19-bc75-cec21354c6b6': 'Storage Table Data Reader',
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3': 'Storage Table Data Contributor',
  '3913510d-42f4-4e42-8a64-420c390055eb': 'Monitoring Metrics Publisher',
  'b279062a-9be3-42a0-92ae-8b3cf002ec4d': 'Workbook Reader',
  '43d0d8ad-25c7-4714-9337-8ba259a9fe05': 'Monitoring Reader',
  '73c42c96-874c-492b-b04d-ab87d138a893': 'Log Analytics Reader',
  'b24988ac-6180-42a0-ab88-20f7382dd24c': 'Contributor',
  'f58310d9-a9f6-439a-9e8d-f62e7b41a168': 'Role Based Access Control Administrator',
};

/** The entries of BUILT_IN_ROLES with these names, by id (a name not in it is an error, not a gap). */
export function rolesNamed(...names: readonly string[]): Record<string, string> {
  const picked = Object.entries(BUILT_IN_ROLES).filter(([, name]) => names.includes(name));
  const missing = names.filter((name) => !picked.some(([, n]) => n === name));
  if (missing.length > 0) throw new Error(`not in BUILT_IN_ROLES: ${missing.join(', ')}`);
  return Object.fromEntries(picked);
}
