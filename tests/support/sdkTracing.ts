import { createTracingClient } from '@azure/core-tracing';

/** Whether a span an Azure SDK client starts now would be recorded: what @azure/core-tracing's instrumenter decides. */
export function sdkSpanRecording(): boolean {
  const { span } = createTracingClient({ namespace: 'Microsoft.Tables', packageName: '@azure/data-tables' }).startSpan('TableClient.getEntity', {});
  const recording = span.isRecording(); // before end(): an ended span records nothing more
  span.end();
  return recording;
}
