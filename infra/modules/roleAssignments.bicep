// What the app's managed identity may do, each at the narrowest scope Azure allows for it:
//
// | role                           | scope                                   | why                                             |
// |--------------------------------|-----------------------------------------|-------------------------------------------------|
// | Storage Blob Data Owner        | the storage account                     | Functions host storage (keys, locks) and the    |
// |                                |                                         | Flex deployment container (Microsoft's minimum  |
// |                                |                                         | for identity-based AzureWebJobsStorage)         |
// | Storage Table Data Reader      | tables Partners, Loans, StoppedClients  | the service only reads them                     |
// | records (the bootstrap's role) | table DrawRequests                      | the service reads and inserts draws: never a    |
// |                                |                                         | change or delete of a draw of record, or a table|
// | key records (the bootstrap's)  | table IdempotencyKeys                   | it reads, inserts and replaces key records      |
// | Monitoring Metrics Publisher   | the Application Insights component      | telemetry ingestion with local auth off         |
//
// No role at resource-group or subscription scope, no management-plane role, no queue role (the app
// has an HTTP trigger and a timer, whose schedule and lock are blobs). docs/deploy.md explains the choices.

@description('Object id of the app\'s managed identity.')
param principalId string

@description('Storage account holding host storage, the deployment container and the tables.')
param storageAccountName string

@description('Table the service reads partners from (PARTNERS_TABLE).')
param partnersTableName string

@description('Table the service reads loans from (LOANS_TABLE).')
param loansTableName string

@description('Table the service inserts draws into (DRAWS_TABLE).')
param drawsTableName string

@description('Table the service records Idempotency-Key use in (IDEMPOTENCY_TABLE).')
param idempotencyTableName string

@description('The stop list the service reads with each partner lookup (STOPPED_CLIENTS_TABLE).')
param stoppedClientsTableName string

@description('Application Insights component the app sends telemetry to.')
param appInsightsName string

@description('Name (a GUID) of the bootstrap\'s records role: read and insert rows.')
@minLength(36)
@maxLength(36)
param recordsRoleId string

@description('Name (a GUID) of the bootstrap\'s key records role: read, insert and replace rows.')
@minLength(36)
@maxLength(36)
param keysRoleId string

// Built-in role definition ids (the same in every tenant).
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
var storageTableDataReader = '76199698-9eea-4c19-bc75-cec21354c6b6'
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb'

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

resource loansTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: loansTableName
}

resource drawsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: drawsTableName
}

resource idempotencyTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: idempotencyTableName
}

resource stoppedClientsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: stoppedClientsTableName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource hostStorage 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(account.id, principalId, storageBlobDataOwner)
  scope: account
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwner)
    description: 'Functions host storage and the Flex Consumption deployment container'
  }
}

resource readPartners 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, principalId, storageTableDataReader)
  scope: partnersTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'Draw Request Service reads partners'
  }
}

resource readLoans 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(loansTable.id, principalId, storageTableDataReader)
  scope: loansTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'Draw Request Service reads loans'
  }
}

resource readStops 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stoppedClientsTable.id, principalId, storageTableDataReader)
  scope: stoppedClientsTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'Draw Request Service reads the stop list'
  }
}

resource writeDraws 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(drawsTable.id, principalId, recordsRoleId)
  scope: drawsTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', recordsRoleId)
    description: 'Draw Request Service reads and inserts draw requests'
  }
}

resource writeIdempotencyKeys 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(idempotencyTable.id, principalId, keysRoleId)
  scope: idempotencyTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keysRoleId)
    description: 'Draw Request Service reads and inserts Idempotency-Key records'
  }
}

resource publishTelemetry 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, principalId, monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisher)
    description: 'Application Insights ingestion with Microsoft Entra authentication'
  }
}
