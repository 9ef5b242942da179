// Alerts that page on-call (docs/runbook.md says what to do for each):
// - 500 rate and 502 rate, separately: the share of invocations whose DrawRequestBatch event has
//   outcome Failed (a defect) or DependencyFailed (Table Storage or the identity provider);
// - a spike of 401s for presented tokens (outcome Unauthorized, any reason but ERR_AUTH_MISSING);
// - any commit whose outcome is unknown (reason CommitOutcomeUnknown): a batch may have been recorded
//   though its partner got a 502; each one is looked at (docs/runbook.md, Commit outcome unknown);
// - telemetry silence: the host recorded DrawRequest requests whose DrawRequestBatch event never came
//   (or the probe succeeded while no event came at all): the alerts above read those events, so a
//   service whose telemetry went dark would otherwise look healthy (docs/runbook.md, Telemetry silent);
// - availability: a standard web test POSTs to /DrawRequest without a token from several regions and
//   expects 401, which proves the host is up, routes the request and runs authentication.
// Invocations without a token (the probe itself, scanners) are left out of the rates and the spike.

@description('Prefix of the alert and web test names.')
param namePrefix string

@description('Azure region of the Application Insights component.')
param location string

@description('Tags for the rules and the web test.')
param tags object

@description('Application Insights component the rules query and the web test reports to.')
param appInsightsId string

@description('true: the web test runs and the rules evaluate and page; false: defined but off.')
param enabled bool

@description('Resource id of the on-call action group; empty: the rules fire without notifying anyone.')
param actionGroupId string

@description('The on-call workbook in the portal; every alert\'s description links it.')
param workbookUrl string

@description('Whom on-call escalates to in this environment; every alert\'s description names it. Empty: the runbook\'s table only.')
param escalationContact string

@description('Name of the per-invocation event (lib/telemetry.ts EVENT_NAME).')
param eventName string

@description('URL the availability test POSTs to without a token.')
param probeUrl string

@description('Availability test locations (ids such as us-va-ash-azr).')
@minLength(1)
param probeLocations array

@description('Locations that must fail at once to page.')
@minValue(1)
param probeFailedLocationCount int

@description('Page when more than this percent of invocations in 15 minutes answered 500.')
@minValue(0)
@maxValue(100)
param failedRatePercent int

@description('Page when more than this percent of invocations in 15 minutes answered 502.')
@minValue(0)
@maxValue(100)
param dependencyFailedRatePercent int

@description('Rates page only once at least this many invocations failed that way in the window.')
@minValue(1)
param minimumFailures int

@description('Page when more than this many presented tokens were refused (401) in 15 minutes.')
@minValue(1)
param unauthorizedSpikeCount int

@description('Page when more than this percent of the requests the host recorded for DrawRequest have no DrawRequestBatch event.')
@minValue(0)
@maxValue(100)
param silentPercent int

@description('Silence pages only once at least this many requests went without their event in the slice.')
@minValue(1)
param minimumSilentRequests int

// What every description ends with: where to look first, and whom to call when the runbook's steps do not suffice.
var escalateTo = empty(escalationContact) ? 'see docs/runbook.md, Paged? Start here' : escalationContact

// The function's name as the host records its requests (functions/main.ts app.http).
var functionName = 'DrawRequest'

// Every invocation's event, less those that sent no token at all (the probe, scanners).
var invocations = 'customEvents | where name == "${eventName}" | extend outcome = tostring(customDimensions.outcome), reason = tostring(customDimensions.reason) | where not(outcome == "Unauthorized" and reason == "ERR_AUTH_MISSING")'

var rateAlerts = [
  {
    name: 'status-500-rate'
    displayName: 'Draw Request Service: 500 rate (outcome Failed)'
    description: 'More than ${failedRatePercent}% of DrawRequest invocations in 15 minutes answered 500: a defect in the service. Runbook: outcome Failed. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    outcome: 'Failed'
    matching: 'outcome == "Failed"'
    severity: 1
    threshold: failedRatePercent
  }
  {
    name: 'status-502-rate'
    displayName: 'Draw Request Service: 502 rate (outcome DependencyFailed)'
    description: 'More than ${dependencyFailedRatePercent}% of DrawRequest invocations in 15 minutes answered 502: Table Storage or the identity provider failed. Runbook: outcome DependencyFailed. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    outcome: 'DependencyFailed'
    // A key in its grace (reason KeyOutcomePending) is a 502 that no dependency caused, settled by the
    // partner's own retry within 10 minutes: not a reason to page.
    matching: 'outcome == "DependencyFailed" and reason != "KeyOutcomePending"'
    severity: 1
    threshold: dependencyFailedRatePercent
  }
]

var actionGroups = empty(actionGroupId) ? [] : [
  actionGroupId
]

resource rateRules 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = [for alert in rateAlerts: {
  name: '${namePrefix}-${alert.name}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: alert.displayName
    description: alert.description
    severity: alert.severity
    enabled: enabled
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: '${invocations} | summarize invocations = count(), matching = countif(${alert.matching}) | where matching >= ${minimumFailures} | extend ratePercent = 100.0 * matching / invocations'
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'ratePercent'
          operator: 'GreaterThan'
          threshold: alert.threshold
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroups
    }
  }
}]

resource unauthorizedSpike 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-status-401-spike'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Draw Request Service: spike of 401s (outcome Unauthorized)'
    description: 'More than ${unauthorizedSpikeCount} presented tokens were refused in 15 minutes: wrong AUTH_* settings, signing keys, an app registration change, or an attack. Group by customDimensions.reason. Runbook: outcome Unauthorized. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    severity: 2
    enabled: enabled
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: '${invocations} | where outcome == "Unauthorized" | summarize unauthorized = count()'
          timeAggregation: 'Total'
          metricMeasureColumn: 'unauthorized'
          operator: 'GreaterThan'
          threshold: unauthorizedSpikeCount
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroups
    }
  }
}

resource outcomeUnknown 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-commit-outcome-unknown'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Draw Request Service: commit outcome unknown (reason CommitOutcomeUnknown)'
    description: 'A commit failed in a way that storage may still have applied: the partner got a 502 saying the batch may have been recorded. Check DrawRequests for its loans and whether a keyed retry settled it. Runbook: Commit outcome unknown. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    severity: 2
    enabled: enabled
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: '${invocations} | where reason == "CommitOutcomeUnknown" | summarize outcomeUnknown = count()'
          timeAggregation: 'Total'
          metricMeasureColumn: 'outcomeUnknown'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroups
    }
  }
}

// The host's request telemetry and the service's events travel separate pipelines, each with its own
// ingestion delay (typically under 3 minutes, at times 10): requests are judged in a 15-minute slice
// that ended 10 minutes ago, against every event of the last 30 minutes. An event is matched to its
// request by operation id (the invocation's trace, which the host passes to the worker). The host
// keeps every request (host.json excludes them from sampling) and the service keeps every event, so
// any request without its event is a loss. Without any request in the slice (the host's own telemetry
// gone too), the probe's successful runs stand for the requests it made.
resource telemetrySilence 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-telemetry-silent'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Draw Request Service: telemetry silent (requests without their DrawRequestBatch event)'
    description: 'More than ${silentPercent}% of the DrawRequest requests the host recorded from 25 to 10 minutes ago (at least ${minimumSilentRequests}) have no DrawRequestBatch event: the service serves partners but its telemetry is missing, and the other alerts cannot fire. Runbook: Telemetry silent. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    severity: 1
    enabled: enabled
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT30M'
    criteria: {
      allOf: [
        {
          query: 'let sliceStart = ago(25m); let sliceEnd = ago(10m); let recorded = customEvents | where name == "${eventName}" | distinct operation_Id; let heard = toscalar(customEvents | where name == "${eventName}" | count); let probed = toscalar(availabilityResults | where timestamp between (sliceStart .. sliceEnd) and success == true | summarize probes = sum(itemCount)); requests | where timestamp between (sliceStart .. sliceEnd) and name == "${functionName}" | summarize served = sum(itemCount), unrecorded = sumif(itemCount, operation_Id !in (recorded)) | extend served = coalesce(served, 0), unrecorded = coalesce(unrecorded, 0) | extend unrecorded = iff(served == 0 and heard == 0, coalesce(probed, 0), unrecorded), served = iff(served == 0 and heard == 0, coalesce(probed, 0), served) | where unrecorded >= ${minimumSilentRequests} | extend silentPercent = 100.0 * unrecorded / served'
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'silentPercent'
          operator: 'GreaterThan'
          threshold: silentPercent
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroups
    }
  }
}

resource probe 'Microsoft.Insights/webtests@2022-06-15' = {
  name: '${namePrefix}-availability'
  location: location
  kind: 'standard'
  // Links the test to the component (the portal and the metric alert need it).
  tags: union(tags, {
    'hidden-link:${appInsightsId}': 'Resource'
  })
  properties: {
    SyntheticMonitorId: '${namePrefix}-availability'
    Name: 'POST /DrawRequest without a token answers 401'
    Description: 'The host is up, routes the request and runs authentication.'
    Enabled: enabled
    Kind: 'standard'
    Frequency: 300
    Timeout: 30
    RetryEnabled: true
    Locations: [for id in probeLocations: {
      Id: id
    }]
    Request: {
      RequestUrl: probeUrl
      HttpVerb: 'POST'
      RequestBody: base64('[]')
      Headers: [
        {
          key: 'Content-Type'
          value: 'application/json'
        }
      ]
      ParseDependentRequests: false
      FollowRedirects: false
    }
    ValidationRules: {
      ExpectedHttpStatusCode: 401
      IgnoreHttpStatusCode: false
      SSLCheck: true
      SSLCertRemainingLifetimeCheck: 7
    }
  }
}

resource availability 'Microsoft.Insights/metricAlerts@2018-03-01' = {
  name: '${namePrefix}-availability'
  location: 'global'
  tags: union(tags, {
    'hidden-link:${appInsightsId}': 'Resource'
    'hidden-link:${probe.id}': 'Resource'
  })
  properties: {
    description: 'POST /DrawRequest without a token did not answer 401 from ${probeFailedLocationCount} or more locations: the host, routing or authentication is down. See docs/deploy.md, Alerts. Workbook: ${workbookUrl} Escalate to: ${escalateTo}'
    severity: 1
    enabled: enabled
    scopes: [
      probe.id
      appInsightsId
    ]
    evaluationFrequency: 'PT1M'
    windowSize: 'PT5M'
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.WebtestLocationAvailabilityCriteria'
      webTestId: probe.id
      componentId: appInsightsId
      failedLocationCount: probeFailedLocationCount
    }
    autoMitigate: true
    actions: [for id in actionGroups: {
      actionGroupId: id
    }]
  }
}
