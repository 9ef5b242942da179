// The storage account: the Functions host's storage, the Flex Consumption deployment container and
// the service's tables (docs/contract.md §4). No shared keys and no anonymous blob access: every caller,
// the app included, authenticates with Microsoft Entra ID.

@description('Account name: 3-24 lowercase letters and digits, globally unique.')
@minLength(3)
@maxLength(24)
param name string

@description('Azure region.')
param location string

@description('Tags for the account.')
param tags object

@description('Redundancy of the account (it holds the DrawRequests of record).')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
param skuName string

@description('Blob container the Flex Consumption app is deployed from.')
param deploymentContainerName string

@description('Tables the service reads and writes (docs/contract.md §4 and the IdempotencyKeys table).')
param tableNames array

@description('Soft-delete retention for blobs and containers, in days.')
@minValue(1)
@maxValue(365)
param blobSoftDeleteDays int

@description('true: the data plane answers only on private endpoints (public network access off, no rule, nothing trusted); false: from every network, with Microsoft Entra authentication still required.')
param networkIsolated bool

@description('Isolated only: true keeps public network access on (default Allow, Microsoft Entra authentication still required) while the private endpoints and the app\'s subnet are introduced (phase 1 of docs/deploy.md, "Moving an environment to isolation"); false closes the account (phase 2).')
param publicAccess bool

// Closed: the data plane answers on the private endpoints only.
var closed = networkIsolated && !publicAccess

@description('Add a CanNotDelete lock so the account (and the draws in it) cannot be deleted by accident.')
param deleteLock bool

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: skuName
  }
  properties: {
    accessTier: 'Hot'
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    // Closed: an update in place (never a new account). ipRules is declared empty so that a deployment
    // also removes a temporary rule a cancelled run of scripts/deploy.sh could have left (docs/deploy.md).
    publicNetworkAccess: closed ? 'Disabled' : 'Enabled'
    networkAcls: {
      defaultAction: closed ? 'Deny' : 'Allow'
      bypass: closed ? 'None' : 'AzureServices'
      ipRules: []
      virtualNetworkRules: []
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: blobSoftDeleteDays
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: blobSoftDeleteDays
    }
  }
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [for tableName in tableNames: {
  parent: tableService
  name: tableName
}]

resource lock 'Microsoft.Authorization/locks@2020-05-01' = if (deleteLock) {
  name: '${account.name}-no-delete'
  scope: account
  properties: {
    level: 'CanNotDelete'
    notes: 'Holds the DrawRequests of record and the Functions host storage. Remove this lock deliberately before deleting the account.'
  }
}

@description('Account resource id (the private endpoints\' target).')
output id string = account.id

@description('Account name (AzureWebJobsStorage__accountName).')
output name string = account.name

@description('Table service endpoint without a trailing slash (TABLES_ENDPOINT).')
output tableEndpoint string = 'https://${account.name}.table.${environment().suffixes.storage}'

@description('URL of the deployment container (functionAppConfig.deployment.storage.value).')
output deploymentContainerUrl string = '${account.properties.primaryEndpoints.blob}${deploymentContainer.name}'
