// The Flex Consumption plan and the Linux function app on the Node version given, with every app setting the
// service reads in production (docs/contract.md §5) and the identity-based settings of the Functions host.
// Flex Consumption takes the runtime, memory and scale from functionAppConfig, not app settings:
// FUNCTIONS_WORKER_RUNTIME, FUNCTIONS_EXTENSION_VERSION and WEBSITE_RUN_FROM_PACKAGE must not be set.

@description('Function app name (also the host name: <name>.azurewebsites.net).')
param name string

@description('Flex Consumption plan name.')
param planName string

@description('Azure region.')
param location string

@description('Tags for the plan and the app.')
param tags object

@description('Resource id of the app\'s user-assigned managed identity.')
param identityId string

@description('Client id of that identity.')
param identityClientId string

@description('Storage account of the Functions host.')
param storageAccountName string

@description('Blob container URL the app is deployed from.')
param deploymentContainerUrl string

@description('Node.js major version (main.bicep\'s nodeVersion).')
@allowed([
  '22'
  '24'
])
param nodeVersion string

@description('Instance memory in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int

@description('Most instances the app scales out to.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int

@description('HTTP invocations one instance runs at once.')
@minValue(1)
@maxValue(1000)
param perInstanceConcurrency int

@description('Always-ready instances of the HTTP trigger group; 0 scales to zero. At least 2 on a zone-redundant plan (refused below).')
@minValue(0)
@maxValue(20)
param alwaysReady int

@description('true: the plan spreads instances across availability zones; alwaysReady must then be 2 or more.')
param zoneRedundant bool

@description('Subnet (delegated to Microsoft.App/environments) the app\'s outbound traffic goes through; empty: none.')
param subnetId string

@description('Application Insights connection string.')
param appInsightsConnectionString string

// --- the service's settings (docs/contract.md §5) ---

@description('AUTH_TENANT_ID')
param authTenantId string

@description('AUTH_AUTHORITY_HOST')
param authAuthorityHost string

@description('AUTH_AUDIENCE (comma-separated)')
param authAudience string

@description('AUTH_ALLOWED_ISSUERS (comma-separated)')
param authAllowedIssuers string

@description('AUTH_REQUIRED_ROLE')
param authRequiredRole string

@description('AUTH_PARTNER_CLAIM (empty: azp, then appid)')
param authPartnerClaim string

@description('AUTH_CLOCK_TOLERANCE_SECONDS')
param authClockToleranceSeconds int

@description('AUTH_ALGORITHMS (comma-separated)')
param authAlgorithms string

@description('TABLES_ENDPOINT')
param tablesEndpoint string

@description('PARTNERS_TABLE')
param partnersTableName string

@description('LOANS_TABLE')
param loansTableName string

@description('DRAWS_TABLE')
param drawsTableName string

@description('IDEMPOTENCY_TABLE')
param idempotencyTableName string

@description('STOPPED_CLIENTS_TABLE')
param stoppedClientsTableName string

@description('DRAW_DAY_TIMEZONE')
param drawDayTimeZone string

@description('MAX_BATCH_SIZE')
param maxBatchSize int

@description('TELEMETRY_SAMPLING_PERCENTAGE')
param telemetrySamplingPercentage int

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
    // Can be switched on an existing Flex Consumption plan in a region that supports it
    // (az functionapp list-flexconsumption-locations --zone-redundant): docs/decisions/0102-prod-is-zone-redundant-with-two-always-ready-instances.md.
    zoneRedundant: zoneRedundant
  }
}

// Microsoft: "No less than two always-ready instances can be configured per function or function group
// while zone redundancy is enabled" (Flex Consumption plan; docs/decisions/0102-prod-is-zone-redundant-with-two-always-ready-instances.md).
// Refused by name rather than raised, so the parameters file states what Azure runs and bills.
var alwaysReadyCount = zoneRedundant && alwaysReady < 2 ? fail('alwaysReady is ${alwaysReady}, but a zone-redundant Flex Consumption plan needs at least 2 always-ready instances: set alwaysReady to 2 or more in the parameters file (docs/decisions/0102-prod-is-zone-redundant-with-two-always-ready-instances.md)') : alwaysReady

// Always-ready instances of the HTTP trigger group (the function's group is `http`); none scales to zero.
var alwaysReadyGroups = alwaysReadyCount == 0 ? [] : [
  {
    name: 'http'
    instanceCount: alwaysReadyCount
  }
]

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    // Virtual network integration: host storage, the package and the tables through the subnet.
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    httpsOnly: true
    clientCertEnabled: false
    siteConfig: {
      minTlsVersion: '1.2'
      scmMinTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        alwaysReady: alwaysReadyGroups
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        triggers: {
          http: {
            perInstanceConcurrency: perInstanceConcurrency
          }
        }
      }
      runtime: {
        name: 'node'
        version: nodeVersion
      }
    }
  }
}

// Bodies the Functions host accepts: 8 KiB above the service's 256 KiB limit.
var requestBodySizeLimitBytes = 270336

// The complete set of app settings: anything not listed here is removed on deployment.
resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: {
    // Functions host storage through the managed identity (no connection string, no key).
    AzureWebJobsStorage__accountName: storageAccountName
    AzureWebJobsStorage__credential: 'managedidentity'
    AzureWebJobsStorage__clientId: identityClientId
    // Telemetry: the host and the SDK ingest with a Microsoft Entra token of the identity.
    APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
    APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
    TELEMETRY_SAMPLING_PERCENTAGE: string(telemetrySamplingPercentage)
    // DefaultAzureCredential picks the user-assigned identity by its client id.
    AZURE_CLIENT_ID: identityClientId
    // Authentication (docs/contract.md §3); the metadata URL is derived from the authority and the tenant.
    AUTH_TENANT_ID: authTenantId
    AUTH_AUTHORITY_HOST: authAuthorityHost
    AUTH_AUDIENCE: authAudience
    AUTH_ALLOWED_ISSUERS: authAllowedIssuers
    AUTH_REQUIRED_ROLE: authRequiredRole
    AUTH_PARTNER_CLAIM: authPartnerClaim
    AUTH_CLOCK_TOLERANCE_SECONDS: string(authClockToleranceSeconds)
    AUTH_ALGORITHMS: authAlgorithms
    // Tables (docs/contract.md §4) through the managed identity.
    TABLES_ENDPOINT: tablesEndpoint
    PARTNERS_TABLE: partnersTableName
    LOANS_TABLE: loansTableName
    DRAWS_TABLE: drawsTableName
    IDEMPOTENCY_TABLE: idempotencyTableName
    STOPPED_CLIENTS_TABLE: stoppedClientsTableName
    // Rules.
    DRAW_DAY_TIMEZONE: drawDayTimeZone
    MAX_BATCH_SIZE: string(maxBatchSize)
    // The host refuses a larger body (413) before buffering it; up to this size the service answers its
    // own 400 for bodies over its 256 KiB limit (lib/limits.ts). The host's default is 100 MB.
    FUNCTIONS_REQUEST_BODY_SIZE_LIMIT: string(requestBodySizeLimitBytes)
    // Options for the node process of the language worker (the host puts them before the worker script):
    // stack traces in the log name lib/….ts lines through the source maps the package ships.
    languageWorkers__node__arguments: '--enable-source-maps'
  }
}

@description('Function app name, for code deployment.')
output name string = site.name

@description('Default host name.')
output defaultHostName string = site.properties.defaultHostName
