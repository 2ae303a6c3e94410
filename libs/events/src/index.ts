export * from './event-schemas';
export * from './validate-event';
export * from './storable-json';
export * from './event-body-hash';
export * from './step-columns';
export * from './encode-step-columns';
export * from './base64-numbers';
