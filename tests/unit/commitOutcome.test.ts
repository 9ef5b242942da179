/**
 * Which failed commits may have been applied by storage (docs/contract.md §2.1): those are answered
 * with the outcome-unknown 502; only the others may say nothing was recorded.
 */
import { mayHaveApplied, type StorageFailure, type StorageFailureCode } from '../../lib/store';

const failure = (code: StorageFailureCode, over: Partial<StorageFailure> = {}): StorageFailure => ({ code, operation: 'commitDraws', ...over });

describe('a failed commit may have been applied', () => {
  test.each<[string, StorageFailure]>([
    ['no answer within the deadline', failure('ERR_STORAGE_TIMEOUT')],
    ['a socket timeout', failure('ERR_STORAGE_TIMEOUT', { storageCode: 'ETIMEDOUT' })],
    ['a connection reset (before or after the request left: nobody can tell)', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'ECONNRESET' })],
    ['a broken pipe', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'EPIPE' })],
    ['a network error without a code', failure('ERR_STORAGE_UNREACHABLE')],
    ['500 OperationTimedOut ("may or may not have succeeded")', failure('ERR_STORAGE_REJECTED', { status: 500, storageCode: 'OperationTimedOut' })],
    ['500 InternalError', failure('ERR_STORAGE_REJECTED', { status: 500, storageCode: 'InternalError' })],
    ['502 from a gateway', failure('ERR_STORAGE_REJECTED', { status: 502 })],
    ['504 from a gateway', failure('ERR_STORAGE_REJECTED', { status: 504 })],
    ['an error status that was not read', failure('ERR_STORAGE_REJECTED')],
    ['any other error of the storage client', failure('ERR_STORAGE_FAILED', { storageCode: 'Error' })],
  ])('%s', (_name, f) => {
    expect(mayHaveApplied(f)).toBe(true);
  });
});

describe('a failed commit surely wrote nothing', () => {
  test.each<[string, StorageFailure]>([
    ['connection refused', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'ECONNREFUSED' })],
    ['host not found', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'ENOTFOUND' })],
    ['name resolution failed for now', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'EAI_AGAIN' })],
    ['host unreachable', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'EHOSTUNREACH' })],
    ['network unreachable', failure('ERR_STORAGE_UNREACHABLE', { storageCode: 'ENETUNREACH' })],
    ['no managed-identity token', failure('ERR_STORAGE_CREDENTIAL', { storageCode: 'CredentialUnavailableError' })],
    ['the table does not exist', failure('ERR_STORAGE_TABLE_MISSING', { status: 404, storageCode: 'TableNotFound' })],
    ['503 ServerBusy (throttled before any work)', failure('ERR_STORAGE_REJECTED', { status: 503, storageCode: 'ServerBusy' })],
    ['403 AuthorizationFailure', failure('ERR_STORAGE_REJECTED', { status: 403, storageCode: 'AuthorizationFailure' })],
    ['400 InvalidInput', failure('ERR_STORAGE_REJECTED', { status: 400, storageCode: 'InvalidInput' })],
    ['409 of another kind than a lost race', failure('ERR_STORAGE_REJECTED', { status: 409, storageCode: 'TableBeingDeleted' })],
    ['429 throttled', failure('ERR_STORAGE_REJECTED', { status: 429 })],
  ])('%s', (_name, f) => {
    expect(mayHaveApplied(f)).toBe(false);
  });

  test('every status from 400 to 599: only 4xx and 503 are sure', () => {
    for (let status = 400; status < 600; status++) {
      expect(mayHaveApplied(failure('ERR_STORAGE_REJECTED', { status }))).toBe(status >= 500 && status !== 503);
    }
  });
});
