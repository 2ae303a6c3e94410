export * from './event-schemas';
export * from './validate-event';
