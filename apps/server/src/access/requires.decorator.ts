import { SetMetadata } from '@nestjs/common';
import type { Role } from './api-key';

export const REQUIRES = 'creditlab:requires';

/**
 * The role a route or root GraphQL field needs ('public': none, for probes). Every handler must say:
 * the guard refuses handlers that do not, so a new route cannot be open by omission.
 */
export const Requires = (role: Role | 'public') => SetMetadata(REQUIRES, role);
