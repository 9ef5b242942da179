// An identity that may write the Partners table: the deploying one (the deployment's partners step,
// scripts/deploy.sh, writes each partner's row from the parameters file) and the stop identity (the
// stop-client workflow sets one row inactive). Data-plane access, scoped to the one table; the app's own
// identity only reads it (roleAssignments.bicep).

@description('Object id of the identity (the pipeline\'s, or the person running scripts/deploy.sh).')
param principalId string

@description('ServicePrincipal for the pipeline\'s identity, User for a person.')
@allowed([
  'ServicePrincipal'
  'User'
])
param principalType string

@description('Why it writes the table (the role assignment\'s description).')
param purpose string = 'The deployment writes the Partners rows of the parameters file'

@description('Storage account holding the tables.')
param storageAccountName string

@description('The Partners table (PARTNERS_TABLE).')
param partnersTableName string

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

resource writePartners 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, principalId, storageTableDataContributor)
  scope: partnersTable
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    description: purpose
  }
}
