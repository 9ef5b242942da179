// What the on-call group may do: the roles docs/runbook.md, "Your access", lists, each at the narrowest
// scope a step of the runbook needs (that table is the one place they are written; tests/unit/runbook.test.ts
// holds it to this module). Readers only: no management-plane write and no table write. Restarting the app
// or changing its settings is the platform team's, a rollback and the emergency stop of a client are GitHub
// workflow runs, which need GitHub permissions, not Azure ones. Monitoring Reader is given on the component
// and the account rather than the group: on the group its */read would include the workspace's
// sharedKeys/read, which Log Analytics Reader excludes by name (its NotActions).

@description('Object id of the on-call Microsoft Entra security group.')
@minLength(36)
@maxLength(36)
param groupObjectId string

@description('Storage account holding the tables.')
param storageAccountName string

@description('The Partners table: a client\'s row (an unknown or inactive client).')
param partnersTableName string

@description('The DrawRequests table: the rows of a commit whose outcome is unknown.')
param drawsTableName string

@description('The stop list: whether a client is stopped.')
param stoppedClientsTableName string

@description('Log Analytics workspace behind Application Insights.')
param workspaceName string

@description('Application Insights component the alerts and the workbook read.')
param appInsightsName string

@description('Name (a GUID) of the on-call workbook.')
param workbookName string

// Built-in role definition ids (the same in every tenant).
var workbookReader = 'b279062a-9be3-42a0-92ae-8b3cf002ec4d'
var monitoringReader = '43d0d8ad-25c7-4714-9337-8ba259a9fe05'
var logAnalyticsReader = '73c42c96-874c-492b-b04d-ab87d138a893'
var storageTableDataReader = '76199698-9eea-4c19-bc75-cec21354c6b6'

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' existing = {
  parent: account
  name: 'default'
}

// The tables the runbook's steps read, each on its own: no role on Loans or IdempotencyKeys, which no step reads.
resource partnersTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: partnersTableName
}

resource drawsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: drawsTableName
}

resource stoppedClientsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' existing = {
  parent: tableService
  name: stoppedClientsTableName
}

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: workspaceName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' existing = {
  name: workbookName
}

resource readWorkbook 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(workbook.id, groupObjectId, workbookReader)
  scope: workbook
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', workbookReader)
    description: 'On-call opens the workbook every alert links'
  }
}

resource readTelemetry 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, groupObjectId, monitoringReader)
  scope: appInsights
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringReader)
    description: 'On-call queries Application Insights and sees the alerts fired on it'
  }
}

resource queryWorkspace 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(workspace.id, groupObjectId, logAnalyticsReader)
  scope: workspace
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', logAnalyticsReader)
    description: 'On-call queries the Log Analytics workspace'
  }
}

resource readStorageMetrics 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(account.id, groupObjectId, monitoringReader)
  scope: account
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringReader)
    description: 'On-call reads the storage account\'s metrics'
  }
}

resource readPartners 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, groupObjectId, storageTableDataReader)
  scope: partnersTable
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'On-call reads a client\'s Partners row'
  }
}

resource readDraws 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(drawsTable.id, groupObjectId, storageTableDataReader)
  scope: drawsTable
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'On-call reads the draw rows of a commit whose outcome is unknown'
  }
}

resource readStops 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(stoppedClientsTable.id, groupObjectId, storageTableDataReader)
  scope: stoppedClientsTable
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'On-call reads whether a client is on the stop list'
  }
}
