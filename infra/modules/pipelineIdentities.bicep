// The pipeline's identities in one environment's resource group (bootstrap.bicep), each usable only
// by one of main's reviewed workflows (docs/deploy.md, "Identities"):
//   deploy: deploy-environment.yml on main, its job in the GitHub environment of the same name (after
//           its required reviewers, in prod); deploys infra/main.bicep and the code, writes the Partners
//           rows, lifts the stops the parameters file lifts.
//   plan:   deploy.yml on main, its what-if job (in no environment): previews the deployment before prod's
//           reviewers are asked; reads no data, writes nothing, holds no Microsoft Graph permission.
//   stop:   stop-client.yml on main, its job in the GitHub environment <env>-stop (no reviewers: it only
//           refuses a client); puts one client on the stop list. Its roles are granted by main.bicep
//           (stopAccess), since the tables do not exist before the first deployment; it holds nothing here.
// GitHub puts the workflow file and the ref in a job's subject only under the repository's subject
// template (scripts/githubSettings.cjs applies it): `repo`, `context`, `ref`, `job_workflow_ref`. So a
// branch's workflow, a changed copy of one of these, or one that names a missing environment (GitHub then
// creates it, unprotected) presents a subject no credential here matches.

@description('appName-environment, as in main.bicep.')
param baseName string

@description('Azure region.')
param location string

@description('owner/name of the GitHub repository, spelled as GitHub spells it (subjects are compared case-sensitively).')
param githubRepository string

@description('Numeric id of the repository\'s owner: gh api repos/<owner>/<repo> --jq .owner.id')
@minLength(1)
param githubOwnerId string

@description('Numeric id of the repository: gh api repos/<owner>/<repo> --jq .id')
@minLength(1)
param githubRepositoryId string

@description('Which form of the subject claim the identities trust: legacy (repo:owner/name), immutable (repo:owner@id/name@id) or both (docs/deploy.md, "Which subject GitHub sends").')
@allowed([
  'both'
  'immutable'
  'legacy'
])
param githubSubjectFormat string

@description('Environment name; also the GitHub environment the deploy job runs in.')
param environmentName string

@description('Id of the custom role that writes management locks.')
param lockRoleId string

@description('Id of the custom what-if role.')
param whatIfRoleId string

@description('Id of the custom stop-list insert role (main.bicep assigns it to the stop identity).')
param stopRoleId string

@description('Id of the custom records role (main.bicep assigns it to the app\'s identity on DrawRequests).')
param recordsRoleId string

@description('Id of the custom key records role (main.bicep assigns it to the app\'s identity on IdempotencyKeys).')
param keysRoleId string

// GitHub's OpenID Connect issuer and the audience Microsoft Entra ID expects for the token exchange.
var githubIssuer = 'https://token.actions.githubusercontent.com'
var exchangeAudience = 'api://AzureADTokenExchange'

// GitHub's two spellings of this repository at the start of a token's subject: the names alone
// (repositories created before 15 July 2026 that have not opted in), or each name followed by @ and its
// immutable numeric id (newer repositories, opted-in ones, and any renamed or transferred since). Entra
// matches a subject exactly, without wildcards, so each spelling needs a credential of its own. int()
// makes a deployment given a name instead of an id fail, rather than create a credential nothing matches.
var repositoryParts = split(githubRepository, '/')
var legacyPrefix = 'repo:${githubRepository}'
var immutablePrefix = 'repo:${repositoryParts[0]}@${string(int(githubOwnerId))}/${repositoryParts[1]}@${string(int(githubRepositoryId))}'
// The legacy credentials keep the names they always had, so that re-running the bootstrap of an
// environment set up before this change finds them rather than adding a duplicate subject.
var legacyForm = {
  prefix: legacyPrefix
  nameSuffix: ''
}
var immutableForm = {
  prefix: immutablePrefix
  nameSuffix: '-immutable'
}
var subjectFormsByFormat = {
  both: [
    legacyForm
    immutableForm
  ]
  immutable: [
    immutableForm
  ]
  legacy: [
    legacyForm
  ]
}
var subjectForms = subjectFormsByFormat[githubSubjectFormat]

// The subject GitHub gives a job of one of main's workflows under the repository's subject template: the
// context (`environment:<name>`, or `ref:<ref>` for a job in no environment), then the run's ref, then the
// workflow file the job is defined in, at that ref (job_workflow_ref, names not ids: GitHub puts the ids in
// the `repo` part only). The ref is main's twice: the run's (a branch's run calling main's file has its own)
// and the file's (a branch's copy has the branch's).
var mainRef = 'refs/heads/main'
var workflows = '${githubRepository}/.github/workflows'
var onMain = 'ref:${mainRef}:job_workflow_ref:${workflows}'

// Built-in roles (the same in every tenant).
var contributor = 'b24988ac-6180-42a0-ab88-20f7382dd24c'
var rbacAdministrator = 'f58310d9-a9f6-439a-9e8d-f62e7b41a168'
// The only built-in roles infra/main.bicep assigns (the app's identity, the deploying identity, the stop
// identity, the on-call group), and the bootstrap's stop-list, records and key records roles: the RBAC
// administrator role is conditioned to them.
var builtInAssignableRoles = [
  'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  '76199698-9eea-4c19-bc75-cec21354c6b6' // Storage Table Data Reader
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
  '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
  'b279062a-9be3-42a0-92ae-8b3cf002ec4d' // Workbook Reader
  '43d0d8ad-25c7-4714-9337-8ba259a9fe05' // Monitoring Reader
  '73c42c96-874c-492b-b04d-ab87d138a893' // Log Analytics Reader
]
var assignableRoles = concat(builtInAssignableRoles, [
  stopRoleId
  recordsRoleId
  keysRoleId
])
var assignableList = join(assignableRoles, ', ')
var assignmentCondition = '((!(ActionMatches{\'Microsoft.Authorization/roleAssignments/write\'})) OR (@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {${assignableList}})) AND ((!(ActionMatches{\'Microsoft.Authorization/roleAssignments/delete\'})) OR (@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {${assignableList}}))'

resource deploy 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-${baseName}-deploy'
  location: location
}

// One credential per subject form, written one at a time: Entra refuses (409) concurrent writes of
// federated credentials under the same identity. Names of their own: an environment bootstrapped before
// keeps its earlier credentials until they are deleted by hand (docs/deploy.md, "Migration").
@batchSize(1)
resource deployFromMain 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = [
  for form in subjectForms: {
    parent: deploy
    name: 'github-main-deploy-${environmentName}${form.nameSuffix}'
    properties: {
      issuer: githubIssuer
      subject: '${form.prefix}:environment:${environmentName}:${onMain}/deploy-environment.yml@${mainRef}'
      audiences: [
        exchangeAudience
      ]
    }
  }
]

resource plan 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-${baseName}-plan'
  location: location
}

@batchSize(1)
resource planFromMain 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = [
  for form in subjectForms: {
    parent: plan
    name: 'github-main-plan${form.nameSuffix}'
    properties: {
      issuer: githubIssuer
      subject: '${form.prefix}:ref:${mainRef}:${onMain}/deploy.yml@${mainRef}'
      audiences: [
        exchangeAudience
      ]
    }
  }
]

// On-call's emergency stop (docs/runbook.md, "Stop one client"), from a GitHub environment of its own so
// that neither prod's reviewers nor the deploying identity's power come with it (and the environment's
// name in the subject ties each environment's stop identity to its own).
resource stop 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-${baseName}-stop'
  location: location
}

@batchSize(1)
resource stopFromMain 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = [
  for form in subjectForms: {
    parent: stop
    name: 'github-main-stop-${environmentName}${form.nameSuffix}'
    properties: {
      issuer: githubIssuer
      subject: '${form.prefix}:environment:${environmentName}-stop:${onMain}/stop-client.yml@${mainRef}'
      audiences: [
        exchangeAudience
      ]
    }
  }
]

resource deployContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, deploy.id, contributor)
  properties: {
    principalId: deploy.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', contributor)
    description: 'The pipeline deploys infra/main.bicep and the code'
  }
}

resource deployRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, deploy.id, rbacAdministrator)
  properties: {
    principalId: deploy.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', rbacAdministrator)
    description: 'The pipeline assigns the roles infra/main.bicep declares, and no other'
    condition: assignmentCondition
    conditionVersion: '2.0'
  }
}

resource deployLocks 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, deploy.id, lockRoleId)
  properties: {
    principalId: deploy.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', lockRoleId)
    description: 'The pipeline keeps the storage delete lock of prod'
  }
}

resource planWhatIf 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, plan.id, whatIfRoleId)
  properties: {
    principalId: plan.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', whatIfRoleId)
    description: 'Main\'s run previews the deployment before prod\'s reviewers approve it'
  }
}

@description('Client id of the deploying identity (AZURE_CLIENT_ID).')
output deployClientId string = deploy.properties.clientId

@description('Object id of the deploying identity.')
output deployPrincipalId string = deploy.properties.principalId

@description('Client id of the what-if identity.')
output planClientId string = plan.properties.clientId

@description('Object id of the what-if identity.')
output planPrincipalId string = plan.properties.principalId

@description('Client id of the stop identity (the stop-client workflow signs in as it).')
output stopClientId string = stop.properties.clientId

@description('Object id of the stop identity (main.bicep grants it the stop list and a read of the Partners table).')
output stopPrincipalId string = stop.properties.principalId
