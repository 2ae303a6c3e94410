export type { AppConfig } from './app-config';
/** Injection token of the validated configuration. */
export const AppConfigToken = Symbol('AppConfig');
