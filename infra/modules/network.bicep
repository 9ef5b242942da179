// The environment's virtual network (docs/deploy.md, "Network isolation"): the function app's outbound
// traffic leaves through a subnet delegated to Flex Consumption, and the storage account answers only on
// private endpoints in a second subnet, found through private DNS zones linked to the network. Shaped as
// Microsoft's Flex Consumption quickstarts do it (Azure-Samples/functions-quickstart-typescript-azd, vnetEnabled).
// A third subnet holds the pipeline's deploy job: GitHub-hosted runners with Azure private networking
// (GitHub.Network/networkSettings), the write path of the Partners rows once storage is closed.
//
// Zones: a virtual network, its subnets and private endpoints span every availability zone of the region,
// and private DNS zones are global; none of them has a zone to choose (docs/decisions/0103-a-lost-region-is-waited-out.md).

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

@description('Subnet of the pipeline\'s private-networked GitHub-hosted runners (delegated to GitHub.Network/networkSettings).')
param runnerSubnetPrefix string

@description('The GitHub organization\'s (or enterprise\'s) database id the runners\' network settings belong to; empty: no network settings (nothing inside the network can write the tables but the app).')
param githubBusinessId string

@description('Storage services that get a private endpoint, hence a private DNS zone: blob, table.')
param storageServices array

var appSubnetName = 'snet-app'
var endpointSubnetName = 'snet-endpoints'
var runnerSubnetName = 'snet-runners'

// Each subnet's network security group allows, on 443, the service tags its callers need, named. No rule
// denies other outbound traffic (Azure's default rules allow the internet): an egress allow-list is the
// lender's network team's decision (docs/decisions/0098-network-security-groups-name-what-is-allowed-and-deny-no.md), and these rules are where it starts.

// The app's subnet: the private endpoints (blob, table), Microsoft Entra ID (the tenant's OpenID metadata
// and signing keys) and Azure Monitor (Application Insights ingestion). Inbound rules do not apply to a
// Flex Consumption integration subnet, so none is declared.
resource appNsg 'Microsoft.Network/networkSecurityGroups@2024-05-01' = {
  name: 'nsg-${name}-app'
  location: location
  tags: tags
  properties: {
    securityRules: [
      {
        name: 'AllowHttpsOutToVirtualNetwork'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'VirtualNetwork'
          access: 'Allow'
          priority: 200
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToAzureActiveDirectory'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'AzureActiveDirectory'
          access: 'Allow'
          priority: 210
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToAzureMonitor'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'AzureMonitor'
          access: 'Allow'
          priority: 220
          direction: 'Outbound'
        }
      }
    ]
  }
}

// The runners' subnet: our own group, not GitHub's actions-nsg-deployment.bicep (which allows GitHub's
// addresses by IP and, in its earlier versions, denied Internet outbound; GitHub is retiring it for domain
// rules: docs/decisions/0098-network-security-groups-name-what-is-allowed-and-deny-no.md). It names what the deploy job calls,
// all on 443: the network, Storage (where the Actions service keeps artifacts and logs, as in GitHub's),
// Microsoft Entra ID (sign-in), Azure Resource Manager (the deployment), App Service (the code deployment,
// the smoke check) and the Microsoft Container Registry (the Bicep Microsoft Graph extension). With no
// outbound deny these restrict nothing; GitHub's own addresses have no service tag. Nothing comes in, as
// GitHub recommends: a runner only calls out.
resource runnerNsg 'Microsoft.Network/networkSecurityGroups@2024-05-01' = {
  name: 'nsg-${name}-runners'
  location: location
  tags: tags
  properties: {
    securityRules: [
      {
        name: 'AllowHttpsOutToVirtualNetwork'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'VirtualNetwork'
          access: 'Allow'
          priority: 200
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToStorage'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'Storage'
          access: 'Allow'
          priority: 210
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToAzureActiveDirectory'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'AzureActiveDirectory'
          access: 'Allow'
          priority: 220
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToAzureResourceManager'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'AzureResourceManager'
          access: 'Allow'
          priority: 230
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToAppService'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'AppService'
          access: 'Allow'
          priority: 240
          direction: 'Outbound'
        }
      }
      {
        name: 'AllowHttpsOutToMicrosoftContainerRegistry'
        properties: {
          protocol: 'Tcp'
          sourcePortRange: '*'
          destinationPortRange: '443'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: 'MicrosoftContainerRegistry'
          access: 'Allow'
          priority: 250
          direction: 'Outbound'
        }
      }
      {
        name: 'DenyAllInbound'
        properties: {
          protocol: '*'
          sourcePortRange: '*'
          destinationPortRange: '*'
          sourceAddressPrefix: '*'
          destinationAddressPrefix: '*'
          access: 'Deny'
          priority: 4096
          direction: 'Inbound'
        }
      }
    ]
  }
}

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
          networkSecurityGroup: {
            id: appNsg.id
          }
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
      {
        name: runnerSubnetName
        properties: {
          addressPrefix: runnerSubnetPrefix
          // The runners reach GitHub and Azure's public endpoints through the platform's default outbound access.
          defaultOutboundAccess: true
          networkSecurityGroup: {
            id: runnerNsg.id
          }
          delegations: [
            {
              name: 'github-hosted-runners'
              properties: {
                serviceName: 'GitHub.Network/networkSettings'
              }
            }
          ]
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

// What GitHub's runner group names to place its runners in this subnet: the organization's network
// configuration takes this resource's GitHubId tag (set by the provider; docs/deploy.md, "Network isolation").
// No `tags`: a redeployment would replace the provider's tags with ours, GitHubId gone; sent without tags,
// as GitHub's own script creates it (docs/decisions/0099-githubs-githubid-tag-is-left-to-github.md).
resource runnerNetworkSettings 'GitHub.Network/networkSettings@2024-04-02' = if (!empty(githubBusinessId)) {
  name: 'ghns-${name}'
  location: location
  properties: {
    subnetId: resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, runnerSubnetName)
    businessId: githubBusinessId
  }
}

@description('Subnet id for the function app\'s virtualNetworkSubnetId.')
output appSubnetId string = resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, appSubnetName)

@description('Subnet id of the private endpoints.')
output endpointSubnetId string = resourceId('Microsoft.Network/virtualNetworks/subnets', vnet.name, endpointSubnetName)

@description('Private DNS zone ids, in the order of storageServices.')
output zoneIds array = [for (service, i) in storageServices: zones[i].id]

@description('The runners\' network settings (GitHub.Network/networkSettings); its GitHubId tag goes into GitHub\'s network configuration. Empty without githubBusinessId.')
output runnerNetworkSettingsName string = empty(githubBusinessId) ? '' : runnerNetworkSettings.name
