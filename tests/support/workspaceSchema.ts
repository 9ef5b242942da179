/**
 * The Log Analytics workspace tables queries scoped to the workspace read (the ingestion budget alert,
 * infra/modules/ingestionBudget.bicep), with their columns and types as Microsoft documents them (Azure
 * Monitor Logs reference, tables/usage: "Hourly usage data for each table in the workspace"). Columns
 * marked deprecated there are kept, so that a query naming one is still a query Azure runs.
 */
export const WORKSPACE_TABLES: Record<string, readonly string[]> = {
  Usage: [
    'TimeGenerated:datetime',
    'StartTime:datetime',
    'EndTime:datetime',
    'DataType',
    'Solution',
    'Quantity:real',
    'QuantityUnit',
    'IsBillable:bool',
    '_IsBillable',
    '_BilledSize:real',
    'MeterId',
    'ResourceUri',
    'SourceSystem',
    'Type',
    'AvgLatencyInSeconds:real',
    'BatchesCapped:long',
    'BatchesOutsideSla:long',
    'BatchesWithinSla:long',
    'TotalBatches:long',
    'Computer',
    'LinkedMeterId',
    'LinkedResourceUri',
  ],
};
