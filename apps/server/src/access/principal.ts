import type { Role } from './api-key';

/** Who is calling: the API key a request authenticated with. */
export interface Principal {
  keyId: string;
  prefix: string;
  /** The only project this key sees; null for an admin key over every project. */
  project: string | null;
  role: Role;
  /** Requests per minute; null: the server's default. */
  rateLimitPerMinute: number | null;
}

const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 };

export function hasRole(principal: Principal, needed: Role): boolean {
  return RANK[principal.role] >= RANK[needed];
}

export function seesProject(principal: Principal, project: string): boolean {
  return principal.project === null || principal.project === project;
}

/** What an error or a log line may say about a key. */
export function describeKey(principal: Principal): string {
  return `key cl_${principal.prefix}_…`;
}
