// The app's user-assigned managed identity: one identity for host storage, the deployment
// container, the tables and Application Insights ingestion. User-assigned (not system-assigned)
// so its role assignments exist before the app first starts, and survive re-creating the app.

@description('Identity name.')
param name string

@description('Azure region.')
param location string

@description('Tags for the identity.')
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

@description('Resource id, for the app\'s identity and the deployment storage authentication.')
output id string = identity.id

@description('Client (application) id: AZURE_CLIENT_ID, AzureWebJobsStorage__clientId, the App Insights authentication string.')
output clientId string = identity.properties.clientId

@description('Object id of the service principal, for role assignments.')
output principalId string = identity.properties.principalId
