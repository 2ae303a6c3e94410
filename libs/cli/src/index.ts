export * from './command-line';
