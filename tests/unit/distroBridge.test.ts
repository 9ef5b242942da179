/**
 * An outside fact lib/telemetry.ts works around (withoutAzureSdkTracing): Microsoft's distro, started with
 * the Azure SDK instrumentation disabled, still installs its OpenTelemetry bridge into @azure/core-tracing
 * (Azure/azure-sdk-for-js pull request 39935, open). When a release fixes it, this test fails: the
 * workaround can then go. Its own file: the distro and lib/telemetry.ts each register OpenTelemetry's
 * globals, once per test file.
 */
import { shutdownAzureMonitor, useAzureMonitor } from 'applicationinsights';
import { sdkSpanRecording } from '../support/sdkTracing';

afterAll(() => shutdownAzureMonitor());

test('the distro with azureSdk disabled makes Azure SDK clients record spans', () => {
  expect(sdkSpanRecording()).toBe(false); // before it: @azure/core-tracing's no-op
  useAzureMonitor({
    azureMonitorExporterOptions: { connectionString: 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/' },
    enableLiveMetrics: false,
    samplingRatio: 1,
    tracesPerSecond: 0, // as lib/telemetry.ts: by ratio, not the default rate limit
    instrumentationOptions: { azureSdk: { enabled: false }, http: { enabled: false } },
  });
  expect(sdkSpanRecording()).toBe(true);
});
