// What the app's managed identity may do, each at the narrowest scope Azure allows for it:
//
// | role                           | scope                                   | why                                             |
// |--------------------------------|-----------------------------------------|-------------------------------------------------|
// | Storage Blob Data Owner        | the storage account                     | Functions host storage (keys, locks) and the    |
// |                                |                                         | Flex deployment container (Microsoft's minimum  |
// |                                |                                         | for identity-based AzureWebJobsStorage)         |
// | Storage Table Data Reader      | tables Partners, Loans                  | the service only reads them                     |
// | Storage Table Data Contributor | tables DrawRequests, IdempotencyKeys    | the service inserts into them                   |
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

@description('Application Insights component the app sends telemetry to.')
param appInsightsName string

// Built-in role definition ids (the same in every tenant).
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
var storageTableDataReader = '76199698-9eea-4c19-bc75-cec21354c6b6'
var storageTableDataContributor = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
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

resource writeDraws 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(drawsTable.id, principalId, storageTableDataContributor)
  scope: drawsTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    description: 'Draw Request Service reads and inserts draw requests'
  }
}

resource writeIdempotencyKeys 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(idempotencyTable.id, principalId, storageTableDataContributor)
  scope: idempotencyTable
  properties: {
    principalId: principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
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
