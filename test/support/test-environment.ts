import { TestEnvironment } from 'jest-environment-node';
// Relative import: Jest loads test environments without moduleNameMapper.
import { stopOwned } from './process-registry';

/**
 * Node's test environment, plus: when a spec file ends — passed, failed, or with a hook that timed
 * out — every process it started and did not stop is stopped, so that nothing keeps Jest alive.
 */
export default class CreditlabTestEnvironment extends TestEnvironment {
  override async teardown(): Promise<void> {
    await stopOwned();
    await super.teardown();
  }
}
