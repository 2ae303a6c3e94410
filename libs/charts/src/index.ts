export * from './palette';
export * from './line-chart';
export * from './distribution-charts';
