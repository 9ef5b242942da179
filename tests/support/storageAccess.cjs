// Azure Storage's side of a data-plane call, shared by the stand-ins that model one (the Azure CLI's `az
// storage` commands in tests/support/azStandIn.cjs, the Table service's REST API in
// tests/support/tableServiceStandIn.cjs): which callers the account's network admits, what each identity's
// roles allow, and a row's ETag, all from the Azure CLI stand-in's state (AZ_STATE).
const { createHash } = require('node:crypto');

/** Azure Storage's refusals: error code → message. */
const REFUSALS = {
  AuthorizationFailure: 'This request is not authorized to perform this operation.',
  AuthorizationPermissionMismatch: 'This request is not authorized to perform this operation using this permission.',
};

/**
 * The code Azure Storage refuses a call with, or undefined: first the account's network (open to all, or
 * the caller inside the network of its private endpoints), then, when the state says what each identity's
 * roles allow, the caller's permission for the Table service operation (Microsoft's names, "Permissions for
 * calling data operations").
 */
function refusal(state, { account, table, network, who, operation }) {
  const rules = state.storage?.[account];
  const inside = rules?.privateNetwork != null && network === rules.privateNetwork;
  const admitted = rules === undefined || inside || (rules.publicNetworkAccess === 'Enabled' && rules.defaultAction === 'Allow');
  if (!admitted) return 'AuthorizationFailure';
  if (state.tableAccess !== undefined && !(state.tableAccess[who]?.[`${account}/${table}`] ?? []).includes(operation)) return 'AuthorizationPermissionMismatch';
  return undefined;
}

/** A row's ETag: changes whenever the row does. */
const etagOf = (row) => `W/"datetime'${createHash('sha256').update(JSON.stringify(row)).digest('hex').slice(0, 16)}'"`;

/** A row as Azure gives it: typed values, no @odata.type annotations (the stand-ins keep rows as strings, annotated). */
const typed = (row) =>
  Object.fromEntries(
    Object.entries(row)
      .filter(([k]) => !k.endsWith('@odata.type'))
      .map(([k, v]) => [k, row[`${k}@odata.type`] === 'Edm.Boolean' ? v === 'true' : v]),
  );

module.exports = { REFUSALS, refusal, etagOf, typed };
