// The on-call workbook: what on-call looks at first (invocations by outcome, the 5xx share, telemetry
// silence, commits whose outcome is unknown, latency, 401 reasons, rejections, failing dependencies, data
// quality, one invocation, one loan), bound to
// this environment's Application Insights. Its content is infra/workbook.json, readable in review;
// docs/runbook.md says what each tile answers and what to do about it.

@description('Display name; unique in the resource group for this source.')
param displayName string

@description('Azure region.')
param location string

@description('Tags for the workbook.')
param tags object

@description('Application Insights component the workbook reads: its source and every query\'s resource.')
param appInsightsId string

@description('Storage account holding the tables: its name heads the workbook, for the runbook\'s table reads (on-call reads no resource group).')
param storageAccountName string

// The JSON names the component and the account by placeholders: one file serves every environment.
var content = replace(replace(loadTextContent('../workbook.json'), '__APPLICATION_INSIGHTS_ID__', appInsightsId), '__STORAGE_ACCOUNT_NAME__', storageAccountName)

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  // A workbook's name must be a GUID: derived from the component, so a redeployment updates it in place.
  name: guid(toLower(appInsightsId), 'draw-request-service-on-call-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: displayName
    category: 'workbook'
    version: 'Notebook/1.0'
    // Lower case, as the portal compares it when it lists a component's workbooks.
    sourceId: toLower(appInsightsId)
    serializedData: content
  }
}

@description('Workbook resource id.')
output id string = workbook.id

@description('Workbook name (a GUID): scope of on-call\'s Workbook Reader role.')
output name string = workbook.name

@description('Link to open the workbook in the Azure portal (alert descriptions and the deployment output give it).')
output url string = '${environment().portal}/#@${tenant().tenantId}/resource${workbook.id}/workbook'
