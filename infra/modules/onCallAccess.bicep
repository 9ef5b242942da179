// What the on-call group may do, each at the narrowest scope the runbook's steps need (docs/runbook.md,
// "Paged? Start here", the access column):
//
// | role                           | scope                              | runbook step                                    |
// |--------------------------------|------------------------------------|-------------------------------------------------|
// | Workbook Reader                | the on-call workbook               | open the workbook every alert links             |
// | Monitoring Reader              | the Application Insights component | its tiles' and the Logs blade's queries, the    |
// |                                |                                    | fired alerts (they target it), Live Metrics     |
// | Log Analytics Reader           | the Log Analytics workspace        | queries over the workspace (Usage, its tables)  |
// | Monitoring Reader              | the storage account                | its latency and availability metrics            |
// | Storage Table Data Reader      | the storage account                | settle a commit whose outcome is unknown, read  |
// |                                |                                    | a Partners row (Reading the tables)             |
// | Storage Table Data Contributor | table Partners                     | emergency stop of one client (Active=false)     |
//
// Readers only, but for the one table whose row is the emergency switch. No management-plane write:
// restarting the app or changing its settings is the platform team's (escalation), and a rollback is a
// GitHub workflow run, which needs GitHub permissions, not Azure ones. Monitoring Reader is given on the
// component and the account rather than the group: on the group its */read would include the
// workspace's sharedKeys/read, which Log Analytics Reader excludes by name (its NotActions).

@description('Object id of the on-call Microsoft Entra security group.')
@minLength(36)
@maxLength(36)
param groupObjectId string

@description('Storage account holding the tables.')
param storageAccountName string

@description('The Partners table (PARTNERS_TABLE): its rows are the per-client switch.')
param partnersTableName string

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

resource readTables 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(account.id, groupObjectId, storageTableDataReader)
  scope: account
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataReader)
    description: 'On-call reads the tables (a commit whose outcome is unknown, a Partners row)'
  }
}

resource stopClients 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(partnersTable.id, groupObjectId, storageTableDataContributor)
  scope: partnersTable
  properties: {
    principalId: groupObjectId
    principalType: 'Group'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    description: 'On-call stops one client in an emergency (its Partners row, Active=false)'
  }
}
