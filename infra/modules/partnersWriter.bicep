// The identity that deploys (the pipeline's, or the person running scripts/deploy.sh): the deployment's
// partners step writes each partner's Partners row from the parameters file, and removes from the stop
// list the stops the file lifts (scripts/deploy.sh). Data-plane access, scoped to those two tables; the
// app's own identity only reads them (roleAssignments.bicep).

@description('Object id of the identity (the pipeline\'s, or the person running scripts/deploy.sh).')
param principalId string

@description('ServicePrincipal for the pipeline\'s identity, User for a person.')
@allowed([
  'ServicePrincipal'
  'User'
])
param principalType string

@description('Storage account holding the tables.')
param storageAccountName string

@description('The Partners table (PARTNERS_TABLE).')
param partnersTableName string

@description('The stop list (STOPPED_CLIENTS_TABLE).')
param stoppedClientsTableName string

var storageTableDataContributor = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'

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

resource writePartners 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, principalId, storageTableDataContributor)
  scope: partnersTable
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    description: 'The deployment writes the Partners rows of the parameters file'
  }
}

resource liftStops 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stoppedClientsTable.id, principalId, storageTableDataContributor)
  scope: stoppedClientsTable
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    description: 'The deployment removes the stops the parameters file lifts'
  }
}
