// The API in Microsoft Entra ID (docs/contract.md §3): its application and service principal, declared
// with the Microsoft Graph Bicep extension. Graph upserts by `uniqueName`, so a redeploy finds the same
// application and changes nothing. Tokens are v2 (aud = the application id), app-only, carry `idtyp`,
// and only clients granted the app role can get one (appRoleAssignmentRequired).
extension microsoftGraphV1

@description('Stable key of the application in the tenant, e.g. drawreq-prod-api. Never change it: a new one is a new application.')
param uniqueName string

@description('Display name in the Entra admin center.')
param displayName string

@description('Value of the app role partners\' client applications are granted (AUTH_REQUIRED_ROLE).')
param roleValue string

// The role's id must stay the same across deployments: derived from the application's key and the value.
var roleId = guid(tenant().tenantId, uniqueName, roleValue)

// Created first with its key only, to learn its application id; the full registration below names
// the App ID URI after that id (api://<appId>), which the application cannot reference on itself.
resource app 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
}

module registration 'entraApiRegistration.bicep' = {
  name: 'entraApiRegistration'
  params: {
    uniqueName: uniqueName
    displayName: displayName
    appId: app.appId
    roleId: roleId
    roleValue: roleValue
  }
}

resource servicePrincipal 'Microsoft.Graph/servicePrincipals@v1.0' = {
  appId: app.appId
  appRoleAssignmentRequired: true
  dependsOn: [
    registration
  ]
}

@description('Application (client) id: the aud of v2 tokens (AUTH_AUDIENCE).')
output appId string = app.appId

@description('App ID URI: partners ask for the scope <uri>/.default.')
output identifierUri string = registration.outputs.identifierUri

@description('Object id of the API\'s service principal: the resource of role grants.')
output servicePrincipalId string = servicePrincipal.id

@description('Id of the app role partners are granted.')
output roleId string = roleId
