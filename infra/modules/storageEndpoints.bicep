// Private endpoints of the storage account: one per service the app uses (blob: host storage and the
// deployment container; table: the service's tables) in the environment's endpoint subnet, each
// registering its address in the environment's private DNS zone; and, for the loan-servicing system, a
// table endpoint in each subnet of its network the platform team names (docs/deploy.md, "Who reaches the tables").

@description('Storage account the endpoints connect to.')
param storageAccountName string

@description('Azure region (of the network the endpoints are in).')
param location string

@description('Tags for the endpoints.')
param tags object

@description('Endpoint subnet of the environment\'s network.')
param subnetId string

@description('Services to connect, each with its private DNS zone: [{ service, zoneId }].')
param services array

@description('Table endpoints in other networks (the loan-servicing system\'s): [{ name, location, subnetId, privateDnsZoneId }], location the region of that network, privateDnsZoneId its privatelink.table zone or \'\' when its own DNS registers the address. The deployer needs subnets/join/action on each subnet and, on a named zone, Private DNS Zone Contributor.')
param externalTableEndpoints array

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource endpoints 'Microsoft.Network/privateEndpoints@2024-05-01' = [for s in services: {
  name: 'pe-${storageAccountName}-${s.service}'
  location: location
  tags: tags
  properties: {
    subnet: {
      id: subnetId
    }
    privateLinkServiceConnections: [
      {
        name: '${storageAccountName}-${s.service}'
        properties: {
          privateLinkServiceId: account.id
          groupIds: [
            s.service
          ]
        }
      }
    ]
  }
}]

resource dnsGroups 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-05-01' = [for (s, i) in services: {
  parent: endpoints[i]
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [
      {
        name: s.service
        properties: {
          privateDnsZoneId: s.zoneId
        }
      }
    ]
  }
}]

resource external 'Microsoft.Network/privateEndpoints@2024-05-01' = [for e in externalTableEndpoints: {
  name: 'pe-${storageAccountName}-table-${e.name}'
  location: e.location
  tags: tags
  properties: {
    subnet: {
      id: e.subnetId
    }
    privateLinkServiceConnections: [
      {
        name: '${storageAccountName}-table-${e.name}'
        properties: {
          privateLinkServiceId: account.id
          groupIds: [
            'table'
          ]
        }
      }
    ]
  }
}]

resource externalDnsGroups 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-05-01' = [for (e, i) in externalTableEndpoints: if (!empty(e.privateDnsZoneId)) {
  parent: external[i]
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [
      {
        name: 'table'
        properties: {
          privateDnsZoneId: e.privateDnsZoneId
        }
      }
    ]
  }
}]
