export * from './client-errors';
export * from './creditlab-client';
export * from './event-sender';
export * from './rollout-events';
export * from './step-columns';
// The connection settings tools share (URL, key, credentials file), for the SDK's users too.
export * from '@creditlab/credentials';
