// Log Analytics workspace and the workspace-based Application Insights component on-call reads
// (docs/runbook.md). Local authentication is off: telemetry is accepted only with a Microsoft Entra
// token, so the connection string alone (which is not a secret) cannot be used to write to it.

@description('Log Analytics workspace name.')
param workspaceName string

@description('Application Insights component name.')
param appInsightsName string

@description('Azure region.')
param location string

@description('Tags for both resources.')
param tags object

@description('Days the workspace keeps logs.')
@minValue(30)
@maxValue(730)
param retentionInDays int

@description('Daily ingestion cap in GB; -1 for none.')
param dailyQuotaGb int

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    workspaceCapping: {
      dailyQuotaGb: dailyQuotaGb
    }
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    IngestionMode: 'LogAnalytics'
    DisableLocalAuth: true
    publicNetworkAccessForIngestion: 'Enabled'
    publicNetworkAccessForQuery: 'Enabled'
  }
}

@description('Workspace name, for on-call\'s Log Analytics Reader role.')
output workspaceName string = workspace.name

@description('Workspace resource id: scope of the ingestion budget alert (the Usage table is the workspace\'s).')
output workspaceId string = workspace.id

@description('Component name, for the Monitoring Metrics Publisher role assignment.')
output appInsightsName string = appInsights.name

@description('Component resource id: scope of the alerts and the availability test.')
output appInsightsId string = appInsights.id

@description('Connection string (an address, not a credential: local authentication is off).')
output connectionString string = appInsights.properties.ConnectionString
