export * from './client-errors';
export * from './creditlab-client';
export * from './rollout-events';
export * from './credentials';
export * from './command-line';
