// Once per subscription and environment, by a person (docs/deploy.md, "Bootstrap"): the identities the
// pipeline signs in as, with no secret anywhere. GitHub Actions presents an OpenID Connect token;
// Microsoft Entra ID exchanges it for the identity's token because a federated credential, declared
// here, names the repository, main's ref, the one workflow file of main that may use the identity and,
// for deploy and stop, the GitHub environment of its job.
//
//   az deployment sub create -l <region> -f infra/bootstrap.bicep \
//     -p environmentName=<dev|prod> githubRepository=<owner>/<repo> \
//        githubOwnerId=<owner id> githubRepositoryId=<repository id> githubSubjectFormat=<both|immutable|legacy>
//
// The ids and the subject format come from GitHub (docs/deploy.md, "Which subject GitHub sends"):
//   gh api repos/<owner>/<repo> --jq '.full_name, .owner.id, .id'
//   gh api repos/<owner>/<repo>/actions/oidc/customization/sub
//
// Needs Owner on the subscription and, for the Microsoft Graph permissions, Privileged Role
// Administrator in the tenant. Everything else is deployed by the pipeline as that identity. A first run
// can fail on Entra replication (a just-created identity "not found"): run it again.
targetScope = 'subscription'
extension microsoftGraphV1

@description('Environment the identities deploy.')
@allowed([
  'dev'
  'prod'
])
param environmentName string

@description('Region of the environment\'s resource group (one that offers Flex Consumption).')
param location string = deployment().location

@description('GitHub repository the pipeline runs in: owner/name, spelled as GitHub spells it (full_name).')
param githubRepository string

@description('Numeric id of the repository\'s owner: gh api repos/<owner>/<repo> --jq .owner.id')
@minLength(1)
param githubOwnerId string

@description('Numeric id of the repository: gh api repos/<owner>/<repo> --jq .id')
@minLength(1)
param githubRepositoryId string

// Both by default: a repository's form changes without notice to Azure (an opt-in, a rename, a
// transfer), and credentials for only the form it used to send would stop signing the pipeline in.
// Narrow it to immutable once the repository sends that form (docs/decisions/0092-the-bootstrap-trusts-both-forms-of-githubs-subject-by.md).
@description('Subject forms the identities trust: both, immutable (repo:owner@id/name@id) or legacy (repo:owner/name).')
@allowed([
  'both'
  'immutable'
  'legacy'
])
param githubSubjectFormat string = 'both'

@description('Short name in resource names, as main.bicep\'s appName.')
param appName string = 'drawreq'

@description('The environment\'s resource group.')
param resourceGroupName string = 'rg-${appName}-${environmentName}'

var baseName = '${appName}-${environmentName}'
var subscriptionScope = subscription().id

// Microsoft Graph and the application permissions of it the deploying identity needs (the same ids in
// every tenant): create the API's application and own it, read partners' service principals, grant roles.
var microsoftGraphAppId = '00000003-0000-0000-c000-000000000000'
var graphPermissions = {
  applicationReadWriteOwnedBy: '18a4783c-866b-4cc7-a460-3d5e5662c884'
  applicationReadAll: '9a5d68dd-52b0-4cc2-bd40-abcf44ac3a30'
  appRoleAssignmentReadWriteAll: '06b708a9-e830-4db3-a914-8e69da51d44f'
}

resource group 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: resourceGroupName
  location: location
  tags: {
    service: 'draw-request-service'
    environment: environmentName
  }
}

// What the pipeline may do in Azure, beyond Contributor: write the delete lock prod keeps on its storage.
resource lockRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'deployment-locks')
  properties: {
    roleName: 'Draw Request Service deployment locks (${subscription().subscriptionId})'
    description: 'Create and remove the management locks infra/main.bicep declares'
    type: 'CustomRole'
    permissions: [
      {
        actions: [
          'Microsoft.Authorization/locks/read'
          'Microsoft.Authorization/locks/write'
          'Microsoft.Authorization/locks/delete'
        ]
        notActions: []
      }
    ]
    assignableScopes: [
      subscriptionScope
    ]
  }
}

// What the plan identity's what-if may do: read the resources, and ask for a what-if (with
// --validation-level ProviderNoRbac, which checks read permissions only); never write, and never read
// data: */read would include the workspace's and the component's queries (Microsoft: for workspaces it
// "allows full unrestricted permissions to read the workspace settings and query data"), their data
// APIs and keys, so those reads are taken out by name (docs/decisions/0074-pull-requests-get-no-azure-role.md).
resource whatIfRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'what-if')
  properties: {
    roleName: 'Draw Request Service what-if (${subscription().subscriptionId})'
    description: 'Preview a deployment of infra/main.bicep; no write, no telemetry data'
    type: 'CustomRole'
    permissions: [
      {
        actions: [
          '*/read'
          'Microsoft.Resources/deployments/whatIf/action'
          'Microsoft.Resources/deployments/validate/action'
        ]
        notActions: [
          'Microsoft.OperationalInsights/workspaces/query/read'
          'Microsoft.OperationalInsights/workspaces/query/*/read'
          'Microsoft.OperationalInsights/workspaces/tables/query/read'
          'Microsoft.OperationalInsights/workspaces/sharedKeys/read'
          'Microsoft.Insights/components/query/read'
          'Microsoft.Insights/components/api/read'
          'Microsoft.Insights/components/events/read'
          'Microsoft.Insights/components/extendQueries/read'
          'Microsoft.Insights/components/apiKeys/read'
          'Microsoft.Insights/components/getToken/read'
          'Microsoft.Insights/generateLiveToken/read'
          'Microsoft.Insights/logs/read'
          'Microsoft.Insights/logs/*/read'
        ]
        dataActions: []
      }
    ]
    assignableScopes: [
      subscriptionScope
    ]
  }
}

// What the stop identity may do to the stop list (main.bicep assigns it on that one table, which does not
// exist yet): Insert Entity, whose data action is this one alone (Microsoft, "Permissions for calling data
// operations"); no read, no merge, replace or delete of a row, no table operation. Lifting a stop is the
// deployment's (docs/deploy.md). main.bicep names this role by the same expression.
resource stopRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'stop-list')
  properties: {
    roleName: 'Draw Request Service stop-list insert (${subscription().subscriptionId})'
    description: 'Insert a row into the stop list; nothing else'
    type: 'CustomRole'
    permissions: [
      {
        actions: []
        notActions: []
        dataActions: [
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/add/action'
        ]
        notDataActions: []
      }
    ]
    assignableScopes: [
      subscriptionScope
    ]
  }
}

// What the app's identity may do to the draws of record (main.bicep assigns it on DrawRequests): read and
// insert (a transaction's inserts are authorized one by one); never change or delete a row, or a table,
// which Storage Table Data Contributor would allow. main.bicep names it by the same expression.
resource recordsRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'records')
  properties: {
    roleName: 'Draw Request Service records (${subscription().subscriptionId})'
    description: 'Read and insert table rows; no change, no delete'
    type: 'CustomRole'
    permissions: [
      {
        actions: []
        notActions: []
        dataActions: [
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/read'
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/add/action'
        ]
        notDataActions: []
      }
    ]
    assignableScopes: [
      subscriptionScope
    ]
  }
}

// What the app's identity may do to the Idempotency-Key rows (main.bicep assigns it on IdempotencyKeys):
// read, insert, and replace a row it read (Update Entity, matching its ETag; docs/contract.md §4.1).
// Never delete: nothing removes a key's rows. Never a table.
resource keysRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'key-records')
  properties: {
    roleName: 'Draw Request Service key records (${subscription().subscriptionId})'
    description: 'Read, insert and replace table rows; no delete, no table'
    type: 'CustomRole'
    permissions: [
      {
        actions: []
        notActions: []
        dataActions: [
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/read'
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/add/action'
          'Microsoft.Storage/storageAccounts/tableServices/tables/entities/update/action'
        ]
        notDataActions: []
      }
    ]
    assignableScopes: [
      subscriptionScope
    ]
  }
}

module identities 'modules/pipelineIdentities.bicep' = {
  name: 'pipelineIdentities-${environmentName}'
  scope: group
  params: {
    baseName: baseName
    location: location
    githubRepository: githubRepository
    githubOwnerId: githubOwnerId
    githubRepositoryId: githubRepositoryId
    githubSubjectFormat: githubSubjectFormat
    environmentName: environmentName
    lockRoleId: lockRole.name
    whatIfRoleId: whatIfRole.name
    stopRoleId: stopRole.name
    recordsRoleId: recordsRole.name
    keysRoleId: keysRole.name
  }
}

resource microsoftGraph 'Microsoft.Graph/servicePrincipals@v1.0' existing = {
  appId: microsoftGraphAppId
}

resource deployGraphPermissions 'Microsoft.Graph/appRoleAssignedTo@v1.0' = [
  for permission in items(graphPermissions): {
    appRoleId: permission.value
    principalId: identities.outputs.deployPrincipalId
    resourceId: microsoftGraph.id
  }
]

// The plan identity gets no Graph permission: what-if does not evaluate Microsoft Graph resources.

@description('infra/env/<env>.pipeline.json deployClientId: the deploying identity (it signs in the pipeline\'s deploy jobs).')
output deployClientId string = identities.outputs.deployClientId

@description('infra/env/<env>.pipeline.json planClientId: the what-if identity (the what-if job of deploy.yml on main).')
output planClientId string = identities.outputs.planClientId

@description('infra/env/<env>.pipeline.json deployPrincipalId: object id of the deploying identity.')
output deployPrincipalId string = identities.outputs.deployPrincipalId

@description('infra/env/<env>.pipeline.json stopClientId: the stop identity (the stop-client workflow signs in as it).')
output stopClientId string = identities.outputs.stopClientId

@description('infra/env/<env>.pipeline.json stopPrincipalId: object id of the stop identity (the deployment grants it the stop list and a read of the Partners table).')
output stopPrincipalId string = identities.outputs.stopPrincipalId

// The account main.bicep creates in this group: the same expression, over the same group id
// (resourceGroup().id there is group.id here), so that the stop-client workflow, whose identity may read
// nothing but the Partners table, knows where the tables are. scripts/deploy.sh checks it against the
// deployment's output.
@description('infra/env/<env>.pipeline.json storageAccountName: the storage account main.bicep names in the group.')
output storageAccountName string = take(toLower('st${replace(appName, '-', '')}${environmentName}${take(uniqueString(group.id), 6)}'), 24)

@description('infra/env/<env>.pipeline.json tenantId.')
output tenantId string = tenant().tenantId

@description('infra/env/<env>.pipeline.json subscriptionId.')
output subscriptionId string = subscription().subscriptionId

@description('infra/env/<env>.pipeline.json resourceGroup (under that name there).')
output resourceGroupName string = group.name
