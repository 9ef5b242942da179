// Once per subscription and environment, by a person (docs/deploy.md, "Bootstrap"): the identities the
// pipeline signs in as, with no secret anywhere. GitHub Actions presents an OpenID Connect token;
// Microsoft Entra ID exchanges it for the identity's token because a federated credential, declared
// here, names the repository and the GitHub environment (or the pull request) it comes from.
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
// Narrow it to immutable once the repository sends that form (docs/decisions.md, "GitHub's immutable
// OIDC subjects").
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

// What a pull request's what-if may do: read, and ask for a what-if (with --validation-level
// ProviderNoRbac, which checks read permissions only); never write.
resource whatIfRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(subscription().id, appName, 'what-if')
  properties: {
    roleName: 'Draw Request Service what-if (${subscription().subscriptionId})'
    description: 'Preview a deployment of infra/main.bicep; no write'
    type: 'CustomRole'
    permissions: [
      {
        actions: [
          '*/read'
          'Microsoft.Resources/deployments/whatIf/action'
          'Microsoft.Resources/deployments/validate/action'
        ]
        notActions: []
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

@description('infra/env/<env>.pipeline.json planClientId: the what-if identity of pull requests.')
output planClientId string = identities.outputs.planClientId

@description('infra/env/<env>.pipeline.json deployPrincipalId: object id of the deploying identity.')
output deployPrincipalId string = identities.outputs.deployPrincipalId

@description('infra/env/<env>.pipeline.json stopClientId: the stop identity (the stop-client workflow signs in as it).')
output stopClientId string = identities.outputs.stopClientId

@description('infra/env/<env>.pipeline.json stopPrincipalId: object id of the stop identity (the deployment grants it the Partners table).')
output stopPrincipalId string = identities.outputs.stopPrincipalId

// The account main.bicep creates in this group: the same expression, over the same group id
// (resourceGroup().id there is group.id here), so that the stop-client workflow, whose identity may read
// nothing but the Partners table, knows where that table is. scripts/deploy.sh checks it against the
// deployment's output.
@description('infra/env/<env>.pipeline.json storageAccountName: the storage account main.bicep names in the group.')
output storageAccountName string = take(toLower('st${replace(appName, '-', '')}${environmentName}${take(uniqueString(group.id), 6)}'), 24)

@description('infra/env/<env>.pipeline.json tenantId.')
output tenantId string = tenant().tenantId

@description('infra/env/<env>.pipeline.json subscriptionId.')
output subscriptionId string = subscription().subscriptionId

@description('infra/env/<env>.pipeline.json resourceGroup (under that name there).')
output resourceGroupName string = group.name
