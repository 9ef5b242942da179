/**
 * The Azure SDK's per-call tracing stays off (issue #32: storage is recorded per round, never per call).
 * Two places could switch it back on, both outside this repository: the distro installs its
 * OpenTelemetry bridge into @azure/core-tracing whatever `azureSdk.enabled` says (lib/telemetry.ts
 * withoutAzureSdkTracing), and every TableClient carries the pipeline's tracing policy (lib/store.ts).
 * tests/integration/telemetry.test.ts proves the same in the package, through the worker: no SDK span
 * reaches the ingestion endpoint.
 */
import { TableClient } from '@azure/data-tables';
import { SDK_TRACING_POLICY, TableStore } from '../../lib/store';
import { startTelemetry } from '../../lib/telemetry';
import { sdkSpanRecording } from '../support/sdkTracing';

const AZURITE =
  'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;';

const policyNames = (client: TableClient) => client.pipeline.getOrderedPolicies().map((p) => p.name);

describe("the store's clients have no per-call tracing policy", () => {
  test('a new TableClient has a policy of that name (so the removal below is not of a name the SDK no longer uses)', () => {
    expect(policyNames(TableClient.fromConnectionString(AZURITE, 'Loans', { allowInsecureConnection: true }))).toContain(SDK_TRACING_POLICY);
  });

  test.each([false, true])('none of the TableStore clients has it (telemetry recording rounds: %s)', (recordRounds) => {
    const store = new TableStore(
      {
        connectionString: AZURITE,
        partnersTable: 'Partners',
        loansTable: 'Loans',
        drawsTable: 'Draws',
        idempotencyTable: 'Keys',
        stoppedClientsTable: 'Stops',
      },
      undefined,
      undefined,
      recordRounds,
    );
    const clients = ['partners', 'loans', 'draws', 'drawsCommit', 'keys'].map((name) => (store as unknown as Record<string, TableClient>)[name]);
    expect(clients).toHaveLength(5);
    for (const client of clients) {
      const names = policyNames(client);
      expect(names.length).toBeGreaterThan(3); // the pipeline itself is there
      expect(names).not.toContain(SDK_TRACING_POLICY);
      if (recordRounds) expect(names).toContain('storageRoundTelemetry');
    }
  });
});

test('with telemetry started, an Azure SDK client starts only no-op spans (tests/unit/distroBridge.test.ts: the distro alone would record them)', () => {
  startTelemetry({ connectionString: 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/', samplingRatio: 1 });
  expect(sdkSpanRecording()).toBe(false);
});
