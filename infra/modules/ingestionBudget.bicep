// A warning to the platform team before telemetry ingestion outgrows what they budgeted (docs/decisions/0119-a-warning-before-ingestion-outgrows-its-budget-not-a-daily.md:
// no daily cap, which would drop data and blind on-call's alerts).
// A log search alert on the workspace's Usage table (hourly records per table; Quantity in MB): the
// billable volume of the last 24 hours, as a share of the daily budget, evaluated every hour. Severity 3:
// a warning to the platform team's action group, never a page to on-call. Nothing is dropped.

@description('Name of the alert rule.')
param name string

@description('Azure region of the workspace.')
param location string

@description('Tags for the rule.')
param tags object

@description('Log Analytics workspace whose Usage table the rule reads (its scope).')
param workspaceId string

@description('true: the rule evaluates and notifies; false: defined but off.')
param enabled bool

@description('Resource id of the platform team\'s action group; empty: the rule fires without notifying anyone.')
param actionGroupId string

@description('Billable ingestion the platform team budgets, in GB a day.')
@minValue(1)
param dailyBudgetGb int

@description('Warn when the last 24 hours\' billable ingestion passes this percent of the daily budget.')
@minValue(1)
@maxValue(100)
param warningPercent int

@description('Where the platform team reads what to do (every notification carries it).')
param runbookSection string

resource budget 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: name
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Draw Request Service: telemetry ingestion past ${warningPercent}% of its budget'
    description: 'Billable ingestion into this Log Analytics workspace in the last 24 hours passed ${warningPercent}% of the ${dailyBudgetGb} GB a day the platform team budgeted. Nothing is dropped. For the platform team, not on-call: ${runbookSection}'
    severity: 3
    enabled: enabled
    scopes: [
      workspaceId
    ]
    evaluationFrequency: 'PT1H'
    windowSize: 'P1D'
    criteria: {
      allOf: [
        {
          // GB as Log Analytics bills them (1,000 MB), as Microsoft's own Usage queries compute them.
          query: 'Usage | where IsBillable | summarize billableGb = sum(Quantity) / 1000.0 | extend budgetPercent = 100.0 * billableGb / ${dailyBudgetGb}'
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'budgetPercent'
          operator: 'GreaterThan'
          threshold: warningPercent
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: empty(actionGroupId) ? [] : [
        actionGroupId
      ]
    }
  }
}
