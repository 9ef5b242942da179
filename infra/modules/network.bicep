// The environment's virtual network (docs/deploy.md, "Network isolation"): the function app's outbound
// traffic leaves through a subnet delegated to Flex Consumption, and the storage account answers only on
// private endpoints in a second subnet, found through private DNS zones linked to the network. Shaped as
// Microsoft's Flex Consumption quickstarts do it (Azure-Samples/functions-quickstart-typescript-azd, vnetEnabled).
//
// Zones: a virtual network, its subnets and private endpoints span every availability zone of the region,
// and private DNS zones are global; none of them has a zone to choose (docs/decisions.md, 2026-11-26).

@description('Virtual network name.')
param name string

@description('Azure region.')
param location string

@description('Tags for the network and the zones.')
param tags object

@description('Address space of the network (CIDR); it must not overlap a network it is ever peered with.')
param addressPrefix string

@description('Subnet the function app integrates with (delegated to Microsoft.App/environments, as Flex Consumption requires).')
param appSubnetPrefix string

@description('Subnet of the private endpoints.')
param endpointSubnetPrefix string

@description('Storage services that get a private endpoint, hence a private DNS zone: blob, table.')
param storageServices array

var appSubnetName = 'snet-app'
var endpointSubnetName = 'snet-endpoints'

resource vnet 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    // Declared inline, not as child resources: a redeployment then leaves nothing half-declared.
    subnets: [
      {
        name: appSubnetName
        properties: {
          addressPrefix: appSubnetPrefix
          // Explicit: the app's outbound to Microsoft Entra ID and Application Insights uses the platform's
          // default outbound access (no NAT gateway). Settable only when the subnet is created.
          defaultOutboundAccess: true
          delegations: [
            {
              name: 'flex-consumption'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
        }
      }
      {
        name: endpointSubnetName
        properties: {
          addressPrefix: endpointSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
        }
      }
    ]
  }
}

// privatelink.<service>.core.windows.net (in this cloud): the zones Azure Storage's private endpoints use.
resource zones 'Microsoft.Network/privateDnsZones@2024-06-01' = [for service in storageServices: {
  name: 'privatelink.${service}.${environment().suffixes.storage}'
  location: 'global'
  tags: tags
  properties: {}
}]

resource links 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01' = [for (service, i) in storageServices: {
  parent: zones[i]
  name: '${name}-link'
  location: 'global'
  tags: tags
  properties: {
    registrationEnabled: false
    virtualNetwork: {
      id: vnet.id
    }
  }
}]

@description('Subnet id for the function app\'s virtualNetworkSubnetId.')
output appSubnetId string = resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, appSubnetName)

@description('Subnet id of the private endpoints.')
output endpointSubnetId string = resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, endpointSubnetName)

@description('Private DNS zone ids, in the order of storageServices.')
output zoneIds array = [for (service, i) in storageServices: zones[i].id]
