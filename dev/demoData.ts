/**
 * Tables and demo rows for a local run on embedded Azurite. In Azure the tables are created by
 * infra and kept current by the loan-servicing system; the service itself never creates them.
 */
import { TableClient, TableServiceClient, type TableEntity } from '@azure/data-tables';
import type { TablesConfig } from '../lib/config';

export interface DemoPartner {
  readonly clientId: string;
  readonly partnerId: string;
  readonly active: boolean;
}

export interface DemoLoan {
  readonly loanNumber: number;
  readonly partnerId: string;
  readonly availableCredit: number;
  readonly fundingInvestorId?: string;
}

export const DEMO_PARTNERS: readonly DemoPartner[] = [
  { clientId: 'demo-partner', partnerId: 'PARTNER-001', active: true },
  { clientId: 'other-partner', partnerId: 'PARTNER-002', active: true },
  { clientId: 'retired-partner', partnerId: 'PARTNER-003', active: false },
];

/** Each demo client's secret at the embedded provider's token endpoint (local runs only; nothing of Azure). */
export const DEMO_CLIENT_SECRETS: Readonly<Record<string, string>> = {
  'demo-partner': 'local-demo',
  'other-partner': 'local-demo-other',
  'retired-partner': 'local-demo-retired',
};

/** The tenant of the embedded Entra stand-in (a fixed made-up GUID, so that printed commands stay good across runs). */
export const DEMO_TENANT_ID = '00000000-0000-4000-8000-0000000d3a05';

/** The demo client that can also authenticate with a certificate (client assertion), as partners are asked to. */
export const DEMO_CERTIFICATE_CLIENT = 'demo-partner';

export const DEMO_LOANS: readonly DemoLoan[] = [
  { loanNumber: 1001, partnerId: 'PARTNER-001', availableCredit: 5000, fundingInvestorId: 'INV-01' },
  { loanNumber: 1002, partnerId: 'PARTNER-001', availableCredit: 250, fundingInvestorId: 'INV-01' },
  { loanNumber: 1003, partnerId: 'PARTNER-001', availableCredit: 1000 },
  { loanNumber: 1004, partnerId: 'PARTNER-001', availableCredit: 750.5, fundingInvestorId: 'INV-02' },
  { loanNumber: 1005, partnerId: 'PARTNER-001', availableCredit: 2500, fundingInvestorId: 'INV-02' },
  { loanNumber: 2001, partnerId: 'PARTNER-002', availableCredit: 5000, fundingInvestorId: 'INV-01' },
];

const insecure = { allowInsecureConnection: true };

/** The settings that name these tables, for a host started with them. */
/** Tables named `<tag>Partners`, `<tag>Loans`, `<tag>Draws`, `<tag>Keys`, `<tag>Stops`: a benchmark's own set. */
export function tablesNamed(tag: string): TablesConfig {
  return {
    partnersTable: `${tag}Partners`,
    loansTable: `${tag}Loans`,
    drawsTable: `${tag}Draws`,
    idempotencyTable: `${tag}Keys`,
    stoppedClientsTable: `${tag}Stops`,
  };
}

export function tableSettings(tables: TablesConfig): Record<string, string> {
  return {
    PARTNERS_TABLE: tables.partnersTable,
    LOANS_TABLE: tables.loansTable,
    DRAWS_TABLE: tables.drawsTable,
    IDEMPOTENCY_TABLE: tables.idempotencyTable,
    STOPPED_CLIENTS_TABLE: tables.stoppedClientsTable,
  };
}

export async function createTables(connectionString: string, tables: TablesConfig): Promise<void> {
  const service = TableServiceClient.fromConnectionString(connectionString, insecure);
  for (const name of [tables.partnersTable, tables.loansTable, tables.drawsTable, tables.idempotencyTable, tables.stoppedClientsTable])
    await service.createTable(name);
}

export function tableClient(connectionString: string, table: string): TableClient {
  return TableClient.fromConnectionString(connectionString, table, insecure);
}

export async function putPartner(client: TableClient, partner: { clientId: string; partnerId?: string; active?: boolean }): Promise<void> {
  const row: TableEntity<Record<string, unknown>> = { partitionKey: partner.clientId, rowKey: '' };
  if (partner.partnerId !== undefined) row.PartnerId = partner.partnerId;
  if (partner.active !== undefined) row.Active = partner.active;
  await client.upsertEntity(row, 'Replace');
}

/** On-call's stop of one client (docs/contract.md §3.3): a row in the stop list, as scripts/stopClient.cjs inserts it. */
export async function putStop(client: TableClient, clientId: string): Promise<void> {
  await client.createEntity({ partitionKey: clientId, rowKey: '', StoppedAt: { value: new Date().toISOString(), type: 'DateTime' }, StopId: 'local' });
}

export async function putLoan(client: TableClient, loan: DemoLoan): Promise<void> {
  const row: TableEntity<Record<string, unknown>> = {
    partitionKey: String(loan.loanNumber),
    rowKey: '',
    PartnerId: loan.partnerId,
    AvailableCredit: { value: String(loan.availableCredit), type: 'Double' },
  };
  if (loan.fundingInvestorId !== undefined) row.FundingInvestorId = loan.fundingInvestorId;
  await client.upsertEntity(row, 'Replace');
}

export async function seedDemo(connectionString: string, tables: TablesConfig): Promise<void> {
  await createTables(connectionString, tables);
  const partners = tableClient(connectionString, tables.partnersTable);
  const loans = tableClient(connectionString, tables.loansTable);
  await Promise.all([...DEMO_PARTNERS.map((p) => putPartner(partners, p)), ...DEMO_LOANS.map((l) => putLoan(loans, l))]);
}
