// Partners as data: each partner's client application is granted the API's app role. A partner is
// an entry of the environment's parameters file (`partners`): its PartnerId and the application id of
// the client application the lender registered for it. The Partners table row is written from the
// `partners` output by the deployment step that follows (scripts/deploy.sh, step partners).
extension microsoftGraphV1

@description('Partners of this environment: [{ partnerId, clientAppId, active?, liftStop? }].')
param partners array

@description('Object id of the API\'s service principal.')
param apiServicePrincipalId string

@description('Id of the app role to grant.')
param roleId string

resource clients 'Microsoft.Graph/servicePrincipals@v1.0' existing = [
  for partner in partners: {
    appId: partner.clientAppId
  }
]

// The admin consent for an application permission: the client's service principal holds the role.
resource grants 'Microsoft.Graph/appRoleAssignedTo@v1.0' = [
  for (partner, i) in partners: {
    appRoleId: roleId
    principalId: clients[i].id
    resourceId: apiServicePrincipalId
  }
]

@description('The Partners rows to write: client id, PartnerId, whether the partner may submit, and the stop (its StopId) a reviewed change lifts, or empty.')
output rows array = [
  for partner in partners: {
    clientId: partner.clientAppId
    partnerId: partner.partnerId
    active: partner.?active ?? true
    liftStop: partner.?liftStop ?? ''
  }
]
