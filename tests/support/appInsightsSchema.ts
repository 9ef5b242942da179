/**
 * The Application Insights tables queries run against, declared once: the classic tables of an
 * Application Insights resource (what alert rules scoped to the component, the workbook and the
 * portal's Logs blade query), with their columns and types as Microsoft documents them (Azure Monitor,
 * "Migrate to workspace-based Application Insights resources", Table schemas: the legacy columns).
 * Columns not listed are string.
 */
export const COMMON_COLUMNS = [
  'timestamp:datetime',
  'itemType',
  'itemId',
  'itemCount:int',
  'customDimensions:dynamic',
  'customMeasurements:dynamic',
  'operation_Name',
  'operation_Id',
  'operation_ParentId',
  'operation_SyntheticSource',
  'session_Id',
  'user_Id',
  'user_AuthenticatedId',
  'user_AccountId',
  'application_Version',
  'client_Type',
  'client_Model',
  'client_OS',
  'client_IP',
  'client_City',
  'client_StateOrProvince',
  'client_CountryOrRegion',
  'client_Browser',
  'cloud_RoleName',
  'cloud_RoleInstance',
  'appId',
  'appName',
  'iKey',
  'sdkVersion',
] as const;

/** Each table's own columns (`success` as bool: the table reference's type, and how queries use it). */
export const APP_INSIGHTS_TABLES: Record<string, readonly string[]> = {
  customEvents: ['name'],
  traces: ['message', 'severityLevel:int'],
  requests: ['id', 'source', 'name', 'url', 'success:bool', 'resultCode', 'duration:real', 'performanceBucket'],
  dependencies: ['id', 'target', 'type', 'name', 'data', 'success:bool', 'resultCode', 'duration:real', 'performanceBucket'],
  exceptions: [
    'problemId',
    'handledAt',
    'type',
    'message',
    'assembly',
    'method',
    'outerType',
    'outerMessage',
    'outerAssembly',
    'outerMethod',
    'innermostType',
    'innermostMessage',
    'innermostAssembly',
    'innermostMethod',
    'severityLevel:int',
    'details:dynamic',
  ],
  availabilityResults: ['id', 'name', 'location', 'success:bool', 'message', 'size:real', 'duration:real', 'performanceBucket'],
};
