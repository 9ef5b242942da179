// The API application's whole registration, applied once its application id is known (entraApi.bicep).
// Graph updates by `uniqueName`: the same application, now with its App ID URI, v2 tokens, the app
// role and the idtyp optional claim.
extension microsoftGraphV1

@description('The application\'s key (entraApi.bicep).')
param uniqueName string

@description('Display name in the Entra admin center.')
param displayName string

@description('The application\'s id, for its App ID URI.')
param appId string

@description('Stable id of the app role.')
param roleId string

@description('Value of the app role (AUTH_REQUIRED_ROLE).')
param roleValue string

resource app 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
  signInAudience: 'AzureADMyOrg'
  identifierUris: [
    'api://${appId}'
  ]
  api: {
    // v2 tokens whichever endpoint a client used: aud is the application id, iss the v2 issuer.
    requestedAccessTokenVersion: 2
  }
  appRoles: [
    {
      id: roleId
      allowedMemberTypes: [
        'Application'
      ]
      displayName: 'Submit draw requests'
      description: 'Partner client applications that may POST /DrawRequest'
      value: roleValue
      isEnabled: true
    }
  ]
  optionalClaims: {
    // idtyp=app on app-only tokens (docs/contract.md §3.2).
    accessToken: [
      {
        name: 'idtyp'
        essential: false
        additionalProperties: []
      }
    ]
  }
}

@description('App ID URI.')
output identifierUri string = 'api://${appId}'
