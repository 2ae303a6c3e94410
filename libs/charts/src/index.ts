export * from './palette';
export * from './line-chart';
export * from './distribution-charts';
export * from './smoothing';
