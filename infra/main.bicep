// Draw Request Service: one copy per environment, deployed into its own resource group with
//   az deployment group create -g <group> -f infra/main.bicep -p infra/env/<env>.parameters.json
// (docs/deploy.md). Every resource is declared in the modules below with a pinned API version.
targetScope = 'resourceGroup'

// ---------------------------------------------------------------- environment

@description('Environment this copy serves.')
@allowed([
  'dev'
  'prod'
])
param environmentName string

@description('Azure region; it must offer Flex Consumption (az functionapp list-flexconsumption-locations).')
param location string = resourceGroup().location

@description('Short name in resource names: 3-10 lowercase letters or digits.')
@minLength(3)
@maxLength(10)
param appName string = 'drawreq'

@description('Tags added to every resource.')
param tags object = {}

// ---------------------------------------------------------------- runtime

// Production runs Node 22; Node 24 is the next, tested in CI beside it and measured in bench/results.md.
// Move an environment by setting this in its parameters file once Microsoft's Flex Consumption page lists
// Node 24 as generally available (docs/decisions/0221-node-24-ready.md names the page).
@description('Node.js major version of the function app (Flex Consumption\'s functionAppConfig.runtime).')
@allowed([
  '22'
  '24'
])
param nodeVersion string = '22'

// ---------------------------------------------------------------- scale

@description('Memory of each instance, in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Most instances the app scales out to.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int

// Chosen from measurements of the package in the real worker at each size (bench/results.md):
// docs/decisions/0115-instance-size-concurrency-and-always-ready-chosen-by.md.
@description('HTTP invocations one instance runs at once (Flex Consumption\'s default is 4, 16 or 32 by size; the bounds are ours, Azure documents none).')
@minValue(1)
@maxValue(1000)
param perInstanceConcurrency int

@description('Always-ready instances of the HTTP trigger group: 0 scales to zero; each one is billed around the clock (at most 20: our bound). At least 2 with zoneRedundant (refused otherwise).')
@minValue(0)
@maxValue(20)
param alwaysReady int

// ---------------------------------------------------------------- storage

@description('Redundancy of the storage account holding the tables.')
@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
param storageSku string = 'Standard_LRS'

@description('Lock the storage account against deletion (prod: it holds the draws of record).')
param storageDeleteLock bool = false

@description('Soft-delete retention for blobs and containers, in days.')
@minValue(1)
@maxValue(365)
param blobSoftDeleteDays int = 7

// ---------------------------------------------------------------- network and zones (docs/deploy.md, "Network isolation")

@description('true: the storage account answers only on private endpoints in the environment\'s virtual network, and the app reaches it through its subnet; false: public endpoints (Microsoft Entra authentication still required).')
param networkIsolated bool

@description('Isolated only: true (phase 1) keeps the storage account\'s public network access on while the network, the endpoints and the app\'s subnet are introduced; false (phase 2, a separate deployment) closes it to the private endpoints, after which only the app and the private-networked runners write the tables: docs/deploy.md, "Network isolation".')
param storagePublicAccess bool = true

@description('Address space of the environment\'s virtual network (isolated only); it must not overlap a network it is peered with.')
param vnetAddressPrefix string = '10.40.0.0/23'

@description('Subnet of the function app, delegated to Microsoft.App/environments: Microsoft says one Flex Consumption app might use up to 40 IP addresses, and Azure reserves 5 in each subnet, so /26 (59 usable; a /27 has 27). Fixed once the app is integrated with it.')
param appSubnetPrefix string = '10.40.0.0/26'

@description('Subnet of the private endpoints.')
param endpointSubnetPrefix string = '10.40.1.0/27'

@description('Subnet of the pipeline\'s private-networked GitHub-hosted runners (one deploy job at a time per environment; /28 is 11 usable addresses).')
param runnerSubnetPrefix string = '10.40.0.64/28'

@description('Isolated only: the database id of the GitHub organization (or enterprise) whose runner group deploys this environment from inside its network (GitHub.Network/networkSettings.businessId); empty: no runner network settings.')
param githubBusinessId string = ''

@description('Table private endpoints for other systems\' networks (the loan-servicing system): [{ name, location, subnetId, privateDnsZoneId }] (docs/deploy.md, "Who reaches the tables").')
param externalTableEndpoints array = []

@description('Spread the Flex Consumption plan\'s instances across availability zones; alwaysReady must then be 2 or more, which modules/functionApp.bicep refuses otherwise (docs/decisions/0102-prod-is-zone-redundant-with-two-always-ready-instances.md).')
param zoneRedundant bool

// ---------------------------------------------------------------- monitoring

@description('Days the Log Analytics workspace keeps telemetry.')
@minValue(30)
@maxValue(730)
param logRetentionInDays int = 30

@description('Daily ingestion cap in GB; -1 for none.')
param logDailyQuotaGb int = -1

// ---------------------------------------------------------------- authentication (docs/contract.md §3)

@description('AUTH_TENANT_ID: tenant of the API\'s app registration; by default the deployment\'s tenant. Lower-cased wherever it is used, as Entra writes tenant ids.')
param authTenantId string = tenant().tenantId

@description('AUTH_AUTHORITY_HOST: the Microsoft Entra authority of this cloud.')
param authAuthorityHost string = environment().authentication.loginEndpoint

@description('AUTH_AUDIENCE beyond the API application\'s id (which is always accepted: v2 tokens carry it as aud), e.g. its App ID URI for v1 tokens; usually empty.')
param authAudiences array = []

@description('AUTH_ALLOWED_ISSUERS; empty (recommended): the issuers of the tenant\'s v2.0 and v1 metadata, right in every cloud.')
param authAllowedIssuers array = []

@description('AUTH_REQUIRED_ROLE: the app role the API application declares and partners\' client applications are granted.')
@minLength(1)
param authRequiredRole string

@description('AUTH_PARTNER_CLAIM; empty: azp, then appid.')
param authPartnerClaim string = ''

@description('AUTH_CLOCK_TOLERANCE_SECONDS')
@minValue(0)
@maxValue(300)
param authClockToleranceSeconds int = 60

@description('AUTH_ALGORITHMS')
@minLength(1)
param authAlgorithms array = [
  'RS256'
]

// ---------------------------------------------------------------- partners (docs/deploy.md, "3. Partners as data")

@description('Partners of this environment: [{ partnerId, clientAppId, active?, liftStop? }]. Each client application is granted the app role, and its Partners row is written by the deployment; liftStop names the stop (its StopId) the deployment removes from the stop list.')
param partners array = []

@description('Object id of the identity that deploys; it may write the Partners table. Empty: no such grant (the rows are then written by someone who may).')
param partnerWriterPrincipalId string = ''

@description('ServicePrincipal for a pipeline\'s identity, User for a person.')
@allowed([
  'ServicePrincipal'
  'User'
])
param partnerWriterPrincipalType string = 'ServicePrincipal'

@description('Object id of the stop identity (infra/bootstrap.bicep\'s stopPrincipalId, set by scripts/deploy.sh): the stop-client workflow signs in as it to put one client on the stop list; it may insert into that table and read the Partners table, nothing else. Empty: no such grant.')
param stopPrincipalId string = ''

@description('PartnerId of the smoke identity: a reserved partner that owns no loan (docs/contract.md §4.5).')
@minLength(1)
param smokePartnerId string

@description('Client id of the smoke identity, the environment\'s deploying identity (set by scripts/deploy.sh). It is granted the app role and gets its Partners row like a partner. Empty: none.')
param smokeClientAppId string = ''

// ---------------------------------------------------------------- tables (docs/contract.md §4)

@description('PARTNERS_TABLE')
param partnersTableName string = 'Partners'

@description('LOANS_TABLE')
param loansTableName string = 'Loans'

@description('DRAWS_TABLE')
param drawsTableName string = 'DrawRequests'

@description('IDEMPOTENCY_TABLE')
param idempotencyTableName string = 'IdempotencyKeys'

@description('STOPPED_CLIENTS_TABLE: the stop list (docs/contract.md §3.3).')
param stoppedClientsTableName string = 'StoppedClients'

// ---------------------------------------------------------------- rules and telemetry

@description('DRAW_DAY_TIMEZONE: IANA time zone that defines "one draw per loan per day".')
@minLength(1)
param drawDayTimeZone string

@description('MAX_BATCH_SIZE')
@minValue(1)
@maxValue(100)
param maxBatchSize int = 100

@description('TELEMETRY_SAMPLING_PERCENTAGE: share of operations whose dependency telemetry is kept.')
@minValue(0)
@maxValue(100)
param telemetrySamplingPercentage int = 100

// ---------------------------------------------------------------- alerts

@description('true: the availability test runs and the alerts evaluate and page.')
param alertsEnabled bool

@description('Resource id of the on-call action group the alerts notify (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Insights/actionGroups/<name>); empty: none.')
param onCallActionGroupId string = ''

@description('Whom on-call escalates to in this environment (team and how to reach it, no secret); every alert\'s description names it. Empty: the runbook\'s table only.')
param escalationContact string = ''

@description('Availability test locations.')
@minLength(1)
param availabilityTestLocations array = [
  'us-va-ash-azr'
  'us-tx-sn1-azr'
  'us-il-ch1-azr'
  'us-ca-sjc-azr'
  'us-fl-mia-edge'
]

@description('Locations that must fail at once to page (Microsoft suggests the number of locations minus 2).')
@minValue(1)
param availabilityFailedLocationCount int = 3

@description('Page when more than this percent of invocations in 15 minutes answered 500.')
@minValue(0)
@maxValue(100)
param failedRatePercent int = 1

@description('Page when more than this percent of invocations in 15 minutes answered 502.')
@minValue(0)
@maxValue(100)
param dependencyFailedRatePercent int = 5

@description('The 500 and 502 rates page only with at least this many such answers in the window.')
@minValue(1)
param alertMinimumFailures int = 3

@description('Page when more than this many presented tokens were refused (401) in 15 minutes.')
@minValue(1)
param unauthorizedSpikeCount int = 50

@description('Telemetry silence: page when more than this percent of the requests the host recorded have no DrawRequestBatch event.')
@minValue(0)
@maxValue(100)
param silentPercent int = 5

@description('Telemetry silence pages only once at least this many requests went without their event.')
@minValue(1)
param minimumSilentRequests int = 3

// ---------------------------------------------------------------- on-call's access (docs/runbook.md, "Paged? Start here")

@description('Object id of the Microsoft Entra security group whose members are on call for this environment: granted what the runbook\'s steps need (modules/onCallAccess.bicep). Empty: no grants.')
param onCallGroupObjectId string = ''

// ---------------------------------------------------------------- telemetry budget (docs/decisions/0119-a-warning-before-ingestion-outgrows-its-budget-not-a-daily.md)

@description('Billable ingestion into the Log Analytics workspace the platform team budgets, in GB a day: expected calls a day times the bytes per call of bench/results.md, times 0.75.')
@minValue(1)
param telemetryDailyBudgetGb int

@description('Warn the platform team when the last 24 hours\' billable ingestion passes this percent of the budget.')
@minValue(1)
@maxValue(100)
param telemetryBudgetWarningPercent int = 80

@description('Resource id of the platform team\'s action group the budget warning notifies (not on-call\'s), in the form of onCallActionGroupId; empty: none.')
param platformActionGroupId string = ''

// ---------------------------------------------------------------- names

var suffix = take(uniqueString(resourceGroup().id), 6)
var baseName = '${appName}-${environmentName}'
var allTags = union(tags, {
  service: 'draw-request-service'
  environment: environmentName
})
var tableNames = [
  partnersTableName
  loansTableName
  drawsTableName
  idempotencyTableName
  stoppedClientsTableName
]
// The service's per-invocation event (lib/telemetry.ts EVENT_NAME), which the alerts query.
var eventName = 'DrawRequestBatch'
// The storage services the app uses, each with a private endpoint when isolated: blob (host storage and
// the deployment container) and table (the service's tables). No queue or file: the app has neither.
var storageServices = [
  'blob'
  'table'
]
var authority = endsWith(authAuthorityHost, '/') ? substring(authAuthorityHost, 0, length(authAuthorityHost) - 1) : authAuthorityHost
// The smoke check's caller (scripts/smokeCheck.cjs): granted and registered exactly as a partner is.
var smokePartners = [
  for clientAppId in (empty(smokeClientAppId) ? [] : [smokeClientAppId]): {
    partnerId: smokePartnerId
    clientAppId: clientAppId
  }
]

// ---------------------------------------------------------------- resources

// Microsoft Entra ID (the Microsoft Graph Bicep extension): the API's application and service
// principal, then each partner's role grant.
module entraApi 'modules/entraApi.bicep' = {
  name: 'entraApi'
  params: {
    uniqueName: '${baseName}-api'
    displayName: 'Draw Request Service (${environmentName})'
    roleValue: authRequiredRole
  }
}

module entraPartners 'modules/entraPartners.bicep' = {
  name: 'entraPartners'
  params: {
    partners: concat(partners, smokePartners)
    apiServicePrincipalId: entraApi.outputs.servicePrincipalId
    roleId: entraApi.outputs.roleId
  }
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  params: {
    name: 'id-${baseName}'
    location: location
    tags: allTags
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    name: take(toLower('st${replace(appName, '-', '')}${environmentName}${suffix}'), 24)
    location: location
    tags: allTags
    skuName: storageSku
    deploymentContainerName: 'app-package'
    tableNames: tableNames
    blobSoftDeleteDays: blobSoftDeleteDays
    deleteLock: storageDeleteLock
    networkIsolated: networkIsolated
    publicAccess: storagePublicAccess
  }
}

module network 'modules/network.bicep' = if (networkIsolated) {
  name: 'network'
  params: {
    name: 'vnet-${baseName}'
    location: location
    tags: allTags
    addressPrefix: vnetAddressPrefix
    appSubnetPrefix: appSubnetPrefix
    endpointSubnetPrefix: endpointSubnetPrefix
    runnerSubnetPrefix: runnerSubnetPrefix
    githubBusinessId: githubBusinessId
    storageServices: storageServices
  }
}

module storageEndpoints 'modules/storageEndpoints.bicep' = if (networkIsolated) {
  name: 'storageEndpoints'
  params: {
    storageAccountName: storage.outputs.name
    location: location
    tags: allTags
    subnetId: networkIsolated ? network.outputs.endpointSubnetId : ''
    services: [
      for (service, i) in storageServices: {
        service: service
        zoneId: networkIsolated ? network.outputs.zoneIds[i] : ''
      }
    ]
    externalTableEndpoints: externalTableEndpoints
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    workspaceName: 'log-${baseName}'
    appInsightsName: 'appi-${baseName}'
    location: location
    tags: allTags
    retentionInDays: logRetentionInDays
    dailyQuotaGb: logDailyQuotaGb
  }
}

module workbook 'modules/workbook.bicep' = {
  name: 'workbook'
  params: {
    displayName: 'Draw Request Service (${environmentName}): on-call'
    location: location
    tags: allTags
    appInsightsId: monitoring.outputs.appInsightsId
    storageAccountName: storage.outputs.name
  }
}

module roleAssignments 'modules/roleAssignments.bicep' = {
  name: 'roleAssignments'
  params: {
    principalId: identity.outputs.principalId
    storageAccountName: storage.outputs.name
    partnersTableName: partnersTableName
    loansTableName: loansTableName
    drawsTableName: drawsTableName
    idempotencyTableName: idempotencyTableName
    stoppedClientsTableName: stoppedClientsTableName
    appInsightsName: monitoring.outputs.appInsightsName
    // The bootstrap's records and key records roles (infra/bootstrap.bicep): the same expressions over the same subscription.
    recordsRoleId: guid(subscription().id, appName, 'records')
    keysRoleId: guid(subscription().id, appName, 'key-records')
  }
}

module onCallAccess 'modules/onCallAccess.bicep' = if (!empty(onCallGroupObjectId)) {
  name: 'onCallAccess'
  params: {
    groupObjectId: onCallGroupObjectId
    storageAccountName: storage.outputs.name
    partnersTableName: partnersTableName
    drawsTableName: drawsTableName
    stoppedClientsTableName: stoppedClientsTableName
    workspaceName: monitoring.outputs.workspaceName
    appInsightsName: monitoring.outputs.appInsightsName
    workbookName: workbook.outputs.name
  }
}

module ingestionBudget 'modules/ingestionBudget.bicep' = {
  name: 'ingestionBudget'
  params: {
    name: '${baseName}-ingestion-budget'
    location: location
    tags: allTags
    workspaceId: monitoring.outputs.workspaceId
    enabled: alertsEnabled
    actionGroupId: platformActionGroupId
    dailyBudgetGb: telemetryDailyBudgetGb
    warningPercent: telemetryBudgetWarningPercent
    runbookSection: 'docs/runbook.md, Ingestion past its budget'
  }
}

module partnersWriter 'modules/partnersWriter.bicep' = if (!empty(partnerWriterPrincipalId)) {
  name: 'partnersWriter'
  params: {
    principalId: partnerWriterPrincipalId
    principalType: partnerWriterPrincipalType
    storageAccountName: storage.outputs.name
    partnersTableName: partnersTableName
    stoppedClientsTableName: stoppedClientsTableName
  }
}

// On-call's emergency stop (docs/runbook.md, "Stop one client"): the stop identity may insert into the
// stop list and read the Partners table, nothing else. Its insert-only role is the bootstrap's custom
// role, whose id is the same expression over the same subscription (infra/bootstrap.bicep, stopRole).
module stopAccess 'modules/stopAccess.bicep' = if (!empty(stopPrincipalId)) {
  name: 'stopAccess'
  params: {
    principalId: stopPrincipalId
    stopRoleId: guid(subscription().id, appName, 'stop-list')
    storageAccountName: storage.outputs.name
    partnersTableName: partnersTableName
    stoppedClientsTableName: stoppedClientsTableName
  }
}

module functionApp 'modules/functionApp.bicep' = {
  name: 'functionApp'
  params: {
    name: 'func-${baseName}-${suffix}'
    planName: 'plan-${baseName}'
    location: location
    tags: allTags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    nodeVersion: nodeVersion
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    perInstanceConcurrency: perInstanceConcurrency
    alwaysReady: alwaysReady
    zoneRedundant: zoneRedundant
    subnetId: networkIsolated ? network.outputs.appSubnetId : ''
    appInsightsConnectionString: monitoring.outputs.connectionString
    authTenantId: toLower(authTenantId)
    authAuthorityHost: authority
    authAudience: join(union([entraApi.outputs.appId], authAudiences), ',')
    authAllowedIssuers: join(authAllowedIssuers, ',')
    authRequiredRole: authRequiredRole
    authPartnerClaim: authPartnerClaim
    authClockToleranceSeconds: authClockToleranceSeconds
    authAlgorithms: join(authAlgorithms, ',')
    tablesEndpoint: storage.outputs.tableEndpoint
    partnersTableName: partnersTableName
    loansTableName: loansTableName
    drawsTableName: drawsTableName
    idempotencyTableName: idempotencyTableName
    stoppedClientsTableName: stoppedClientsTableName
    drawDayTimeZone: drawDayTimeZone
    maxBatchSize: maxBatchSize
    telemetrySamplingPercentage: telemetrySamplingPercentage
  }
  // The host reads its storage, the package and the tables as soon as it starts: its roles, and when
  // isolated the private endpoints and their DNS records, exist first.
  dependsOn: [
    roleAssignments
    storageEndpoints
  ]
}

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  params: {
    namePrefix: baseName
    location: location
    tags: allTags
    appInsightsId: monitoring.outputs.appInsightsId
    enabled: alertsEnabled
    actionGroupId: onCallActionGroupId
    eventName: eventName
    probeUrl: 'https://${functionApp.outputs.defaultHostName}/DrawRequest'
    probeLocations: availabilityTestLocations
    probeFailedLocationCount: availabilityFailedLocationCount
    failedRatePercent: failedRatePercent
    dependencyFailedRatePercent: dependencyFailedRatePercent
    minimumFailures: alertMinimumFailures
    unauthorizedSpikeCount: unauthorizedSpikeCount
    silentPercent: silentPercent
    minimumSilentRequests: minimumSilentRequests
    workbookUrl: workbook.outputs.url
    escalationContact: escalationContact
  }
}

@description('Function app to deploy the code to (scripts/deploy.sh).')
output functionAppName string = functionApp.outputs.name

@description('Base URL partners call: POST <url>/DrawRequest.')
output functionAppUrl string = 'https://${functionApp.outputs.defaultHostName}'

@description('Storage account holding the tables (Partners rows are added here).')
output storageAccountName string = storage.outputs.name

@description('true: the app reaches storage through its subnet and the private endpoints.')
output networkIsolated bool = networkIsolated

@description('The storage account answers on its private endpoints only (isolated and storagePublicAccess false): the Partners step then runs on the environment\'s private-networked runners.')
output storageClosed bool = networkIsolated && !storagePublicAccess

@description('Isolated with githubBusinessId: the runners\' GitHub.Network/networkSettings, whose GitHubId tag GitHub\'s network configuration takes (docs/deploy.md).')
output runnerNetworkSettingsName string = networkIsolated ? network.outputs.runnerNetworkSettingsName : ''

@description('The Partners table (the deployment writes its rows).')
output partnersTableName string = partnersTableName

@description('The stop list (the deployment removes the stops the parameters file lifts).')
output stoppedClientsTableName string = stoppedClientsTableName

@description('Table endpoint (TABLES_ENDPOINT).')
output tablesEndpoint string = storage.outputs.tableEndpoint

@description('Application Insights component on-call queries.')
output appInsightsName string = monitoring.outputs.appInsightsName

@description('The on-call workbook, in the Azure portal (docs/runbook.md).')
output workbookUrl string = workbook.outputs.url

@description('The API application\'s id (the aud of its tokens).')
output apiAppId string = entraApi.outputs.appId

@description('The API\'s App ID URI: partners ask for <uri>/.default.')
output apiIdentifierUri string = entraApi.outputs.identifierUri

@description('The Partners rows the deployment writes (scripts/deploy.sh, step partners), the smoke identity\'s included.')
output partnerRows array = entraPartners.outputs.rows
