export * from './descriptive';
export * from './sign-agreement';
export * from './groups';
export * from './grouped-scores';
export * from './bootstrap';
export * from './paired-tests';
export * from './outcome-credit';
export * from './histogram';
