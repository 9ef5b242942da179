/**
 * Preloaded into a worker under test (`node --require`): a fault no setting produces, to prove what the
 * service does when the telemetry SDK fails to start without throwing. Another copy of the OpenTelemetry
 * API (version 0.0.0) has taken the global registry and cannot be removed, so the SDK's providers cannot
 * register: OpenTelemetry reports it on its diagnostic channel only, and every recording would go to a
 * no-op provider.
 */
'use strict';
Object.defineProperty(globalThis, Symbol.for('opentelemetry.js.api.1'), { value: { version: '0.0.0' }, configurable: false, writable: false });
