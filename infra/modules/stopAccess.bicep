// What the stop identity may do (docs/deploy.md, "Identities"): stop a client and nothing else. It may
// insert a row into the stop list (the bootstrap's custom role: Insert Entity's data action alone, so no
// merge, replace or delete of a row, and no table operation) and read the Partners table (to refuse a
// client id that names no partner). It cannot lift a stop, change or remove a Partners row, or delete a
// table. Table storage supports no role-assignment conditions, so the role itself is the narrowing.

@description('Object id of the stop identity (infra/bootstrap.bicep\'s stopPrincipalId).')
param principalId string

@description('Name (a GUID) of the bootstrap\'s stop-list insert role.')
@minLength(36)
@maxLength(36)
param stopRoleId string

@description('Storage account holding the tables.')
param storageAccountName string

@description('The Partners table (PARTNERS_TABLE).')
param partnersTableName string

@description('The stop list (STOPPED_CLIENTS_TABLE).')
param stoppedClientsTableName string

var storageTableDataReader = '76199698-9eea-4c19-bc75-cec21354c6b6'

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' existing = {
  parent: account
  name: 'default'
}

resource partnersTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: partnersTableName
}

resource stoppedClientsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: stoppedClientsTableName
}

resource insertStops 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stoppedClientsTable.id, principalId, stopRoleId)
  scope: stoppedClientsTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', stopRoleId)
    description: 'The stop-client workflow puts one client on the stop list'
  }
}

resource readPartners 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, principalId, storageTableDataReader)
  scope: partnersTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'The stop-client workflow refuses a client id that names no partner'
  }
}
