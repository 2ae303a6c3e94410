export * from './markdown-section';
