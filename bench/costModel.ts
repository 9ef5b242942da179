/**
 * What Flex Consumption bills for this service, computed from the measured figures of bench/sizes.ts.
 *
 * Billing rules (Microsoft Learn, flex-consumption-plan and functions-consumption-costs):
 *  - each instance is billed in one of two modes; on demand: the instance's configured memory × the time
 *    it is actively executing functions (GB-s), plus executions; concurrent executions on one instance
 *    share that time (the docs' example: 10 concurrent requests on one 2 GB instance for an hour are
 *    2 GB × 3600 s);
 *  - "the minimum billable execution period for both execution modes is 1,000 ms. Past that, the
 *    billable activity period is rounded up to the nearest 100 ms";
 *  - always ready: a baseline for each always-ready instance's memory around the clock, a lower rate
 *    while it executes, executions; no free grant;
 *  - the configured size is billed, not the memory used.
 * Prices: USD, East US, pay-as-you-go list prices. The on-demand rates are the ones Microsoft's own
 * worked example uses; the always-ready rates are from the pricing page as quoted by several sources
 * (docs/decisions/0116-the-cost-model-follows-microsofts-billing-rules.md says how sure each is). The monthly free grant (100,000 GB-s and 250,000
 * executions, on demand only) is left out of the per-million figures and counted in the monthly ones.
 */
export const PRICES = {
  onDemandGbSecond: 0.000026,
  perMillionExecutions: 0.4,
  alwaysReadyBaselineGbSecond: 0.000004,
  alwaysReadyExecutionGbSecond: 0.000016,
  freeGbSeconds: 100_000,
  freeExecutions: 250_000,
} as const;

const MONTH_SECONDS = 30 * 24 * 3600;

/** The billed length of one activity window of `ms`: at least 1 s, then rounded up to 100 ms. */
export function billedSeconds(ms: number): number {
  return Math.max(1000, Math.ceil(ms / 100) * 100) / 1000;
}

const gb = (memoryMB: number) => memoryMB / 1024;

/** Sparse traffic: every call opens its own activity window on an instance that is otherwise idle. */
export function sparsePerMillion(memoryMB: number, latencyMs: number): number {
  return 1e6 * gb(memoryMB) * billedSeconds(latencyMs) * PRICES.onDemandGbSecond + PRICES.perMillionExecutions;
}

/** Steady traffic: instances busy back to back, each serving `perSecond` calls. */
export function steadyPerMillion(memoryMB: number, perSecond: number): number {
  return (1e6 * gb(memoryMB) * PRICES.onDemandGbSecond) / perSecond + PRICES.perMillionExecutions;
}

/** One always-ready instance's baseline for a 30-day month, before its execution time. */
export function alwaysReadyMonthly(memoryMB: number): number {
  return gb(memoryMB) * MONTH_SECONDS * PRICES.alwaysReadyBaselineGbSecond;
}

/**
 * The share of the time an instance must be executing for an always-ready instance to cost no more
 * than on demand: its baseline is paid all the time, and each active second is billed at the lower
 * always-ready rate (the memory size cancels out).
 */
export function alwaysReadyBreakEvenShare(): number {
  return PRICES.alwaysReadyBaselineGbSecond / (PRICES.onDemandGbSecond - PRICES.alwaysReadyExecutionGbSecond);
}

/** On demand, for `calls` a month that each open their own window of `latencyMs`, after the free grant. */
export function sparseMonthly(memoryMB: number, latencyMs: number, calls: number): number {
  const gbSeconds = Math.max(0, calls * gb(memoryMB) * billedSeconds(latencyMs) - PRICES.freeGbSeconds);
  const executions = Math.max(0, calls - PRICES.freeExecutions);
  return gbSeconds * PRICES.onDemandGbSecond + (executions / 1e6) * PRICES.perMillionExecutions;
}

/**
 * Application Insights (workspace-based): Log Analytics' Analytics Logs, pay as you go, per GB
 * (10^9 bytes) billed, the first 5 GB a month free. The billed size is computed from the stored
 * columns, "around 25 percent less than the incoming data size" on average (azure-monitor/logs/cost-logs).
 */
export const INGESTION = { perGb: 2.3, billedShare: 0.75, freeGbPerMonth: 5 } as const;

/**
 * What one call's telemetry costs per million calls: the JSON it sends (measured at the ingestion
 * endpoint), billed at INGESTION.billedShare of that, at the Analytics Logs rate, before the free 5 GB
 * a month (left out as the Functions grant is). The same for sparse and for steady traffic: the bytes
 * are per call, whatever the instance does between calls.
 */
export function telemetryPerMillion(bytesPerCall: number): number {
  return ((bytesPerCall * 1e6) / 1e9) * INGESTION.billedShare * INGESTION.perGb;
}

/** A month's Analytics Logs bill for `calls` that each send `bytesPerCall`, after the free 5 GB. */
export function ingestionMonthly(bytesPerCall: number, calls: number): number {
  const billedGb = (calls * bytesPerCall * INGESTION.billedShare) / 1e9;
  return Math.max(0, billedGb - INGESTION.freeGbPerMonth) * INGESTION.perGb;
}

/**
 * Network isolation (issue #34), USD list, East US: a private endpoint is billed by the hour plus per GB
 * through it (Azure Private Link pricing), a private DNS zone per month for the first 25 (Azure DNS
 * pricing); the virtual network, its subnets and the app's integration are free. Paid only while an
 * environment is isolated.
 */
export const NETWORK = { endpointPerHour: 0.01, endpointPerGb: 0.01, dnsZonePerMonth: 0.5 } as const;

const MONTH_HOURS = MONTH_SECONDS / 3600;

/** An isolated environment's month: its endpoints around the clock, its zones, and the storage traffic through the endpoints. */
export function networkMonthly(endpoints: number, dnsZones: number, gbThroughEndpoints: number): number {
  return endpoints * MONTH_HOURS * NETWORK.endpointPerHour + dnsZones * NETWORK.dnsZonePerMonth + gbThroughEndpoints * NETWORK.endpointPerGb;
}

/**
 * The always-ready instances a plan is billed for: a zone-redundant Flex Consumption plan keeps at least
 * two across zones, whatever count was set before zone redundancy (Microsoft Learn, Reliability in Azure
 * Functions), and takes no fewer once it is on (infra/modules/functionApp.bicep refuses fewer first).
 */
export function billedAlwaysReady(alwaysReady: number, zoneRedundant: boolean): number {
  return zoneRedundant ? Math.max(alwaysReady, 2) : alwaysReady;
}

/** A plan's always-ready baseline for a month, before executions. */
export function alwaysReadyPlanMonthly(memoryMB: number, alwaysReady: number, zoneRedundant: boolean): number {
  return billedAlwaysReady(alwaysReady, zoneRedundant) * alwaysReadyMonthly(memoryMB);
}

/**
 * Table Storage capacity, USD per GB-month, East US: standard LRS tables at $0.045 (third-party quotes of
 * Microsoft's list price); prod's ZRS is priced here at twice that, a deliberately generous bound. Capacity
 * is billed on the average stored over the month.
 */
export const TABLE_STORAGE = { perGbMonthLrs: 0.045, zrsBound: 2 } as const;

/**
 * The stored size of an entity (Microsoft's formula for Table Storage: 4 bytes, the keys as UTF-16, and per
 * property 8 bytes, its name as UTF-16 and its value: a string as UTF-16 plus 4 bytes, a DateTime 8 bytes).
 */
export function entityBytes(partitionKey: string, rowKey: string, properties: Readonly<Record<string, string | Date>>): number {
  const value = (v: string | Date) => (typeof v === 'string' ? v.length * 2 + 4 : 8);
  return 4 + (partitionKey.length + rowKey.length) * 2 + Object.entries(properties).reduce((sum, [name, v]) => sum + 8 + name.length * 2 + value(v), 0);
}

/**
 * What a keyed batch of `loans` distinct loans leaves in IdempotencyKeys (docs/contract.md §4.1): its take's
 * two rows, the holder and its own row (a UUID key, seven-digit loan numbers, a UUID request id); nothing
 * removes them.
 */
export function keyedBatchBytes(loans: number): number {
  const hash = 'f'.repeat(64);
  const columns = {
    PartnerId: 'PARTNER-0001',
    IdempotencyKey: '00000000-0000-4000-8000-000000000000',
    BatchHash: hash,
    Day: '2031-01-01',
    LoanNumbers: Array.from({ length: loans }, (_, i) => String(1_000_000 + i)).join(','),
    RequestId: '00000000-0000-4000-8000-000000000000',
    TakenAt: new Date(0),
  };
  return entityBytes(hash, '', columns) + entityBytes(hash, hash, { ...columns, State: 'Taken' });
}

/** The month's capacity bill for key rows after `months` of `keyedBatchesPerMonth`, kept for good (ZRS at its bound). */
export function keyRowsMonthly(keyedBatchesPerMonth: number, loansPerBatch: number, months: number): number {
  const gb = (keyedBatchesPerMonth * months * keyedBatchBytes(loansPerBatch)) / 1e9;
  return gb * TABLE_STORAGE.perGbMonthLrs * TABLE_STORAGE.zrsBound;
}
