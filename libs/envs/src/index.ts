export * from './random';
export * from './household/household-task';
export * from './household/household-env';
export * from './household/household-solver';
