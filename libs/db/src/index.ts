export * from './embedded-postgres';
export * from './migrate';
export * from './statement-counter';
export * from './prisma';
