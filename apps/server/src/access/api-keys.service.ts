import { Inject, Injectable } from '@nestjs/common';
import { isUuid } from '../database/uuid';
import { LRUCache } from 'lru-cache';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { PROJECT_NAME, ROLES, generateApiKey, hashApiKey, type Role } from './api-key';
import { seesProject, type Principal } from './principal';
import { UnknownKeyThrottle } from './unknown-key-throttle';

export interface ApiKeyRecord {
  id: string;
  prefix: string;
  name: string;
  project: string | null;
  role: Role;
  rateLimitPerMinute: number | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface ProjectRecord {
  name: string;
  description: string;
  createdAt: Date;
}

export interface NewKeyRequest {
  /** Omitted: the caller's project (an admin key over every project must name one, or ask for role admin). */
  project?: string | null;
  role: Role;
  name?: string | null;
  rateLimitPerMinute?: number | null;
}

/**
 * Projects and API keys: authentication of a presented key, and the admin operations on keys and
 * projects, each confined to what the calling key may see.
 */
@Injectable()
export class ApiKeysService {
  /**
   * Presented key hash → principal, for keys in use. Revocation by this process clears it at once;
   * other processes see a revocation within the cache's lifetime (CREDITLAB_KEY_CACHE_SECONDS; 0
   * looks every key up every time).
   */
  private readonly liveKeys: LRUCache<string, Principal> | undefined;
  /**
   * Hashes that matched no live key, kept apart: made-up keys, however many, cannot push the keys
   * in use out of `liveKeys`, and a client retrying a wrong key costs one lookup a minute. Kept
   * even when keys are not cached: a key no one holds cannot come to work later (a revoked key
   * stays revoked, and a new one is random), so remembering it is never out of date.
   */
  private readonly unknownKeys = new LRUCache<string, true>({ max: 1_000, ttl: 60_000 });
  /**
   * Hashes of keys that worked in the last day: looked up even from an address whose lookups of
   * unknown keys are used up, so that whoever else sends made-up keys from a shared address (a
   * NAT, a CI host) cannot lock a trainer out. Only real keys get here, so it costs little.
   */
  private readonly recentlyLive = new LRUCache<string, true>({ max: 10_000, ttl: 86_400_000 });
  private readonly throttle: UnknownKeyThrottle;

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(AppConfigToken) config: AppConfig,
  ) {
    // lru-cache reads a ttl of 0 as "never stale": no cache at all is what 0 asks for.
    const ttl = Math.round(config.access.keyCacheSeconds * 1000);
    if (ttl > 0) this.liveKeys = new LRUCache({ max: 10_000, ttl });
    this.throttle = new UnknownKeyThrottle(config.access.unknownKeysPerMinute);
  }

  /**
   * The principal of a presented key, or undefined when no live key has that value. `from`: the
   * client's address (clientAddress), when a client presents the key (not when a socket's key is
   * checked again): an address that has presented too many unknown keys gets a 429 instead of a
   * lookup.
   */
  async authenticate(key: string, from?: string): Promise<Principal | undefined> {
    const hash = hashApiKey(key);
    const cacheKey = hash.toString('hex');
    const live = this.liveKeys?.get(cacheKey);
    if (live) return live;
    if (this.unknownKeys.has(cacheKey)) return undefined;
    const counted = from !== undefined && !this.recentlyLive.has(cacheKey);
    if (counted) await this.throttle.take(from);
    // Looking a key up also records its use: at most once per cache lifetime per process.
    const res = await this.db.pool.query<{
      id: string;
      prefix: string;
      project: string | null;
      role: Role;
      rate_limit_per_minute: number | null;
    }>(
      `UPDATE api_keys SET last_used_at = now() WHERE secret_hash = $1 AND revoked_at IS NULL
       RETURNING id, prefix, project, role, rate_limit_per_minute`,
      [hash],
    );
    const row = res.rows[0];
    if (!row) {
      this.unknownKeys.set(cacheKey, true);
      return undefined;
    }
    if (counted) await this.throttle.refund(from);
    const principal = {
      keyId: row.id,
      prefix: row.prefix,
      project: row.project,
      role: row.role,
      rateLimitPerMinute: row.rate_limit_per_minute,
    };
    this.recentlyLive.set(cacheKey, true);
    this.liveKeys?.set(cacheKey, principal);
    return principal;
  }

  async projects(by: Principal): Promise<ProjectRecord[]> {
    return this.db.prisma.project.findMany({
      where: by.project === null ? {} : { name: by.project },
      orderBy: { name: 'asc' },
    });
  }

  async createProject(
    by: Principal,
    name: string,
    description: string | null | undefined,
  ): Promise<ProjectRecord> {
    if (by.project !== null) {
      throw new DomainError(
        ErrorCode.Forbidden,
        'creating projects needs an admin key that is not confined to a project',
      );
    }
    checkProjectName(name, 'name');
    const res = await this.db.pool.query<{ name: string; description: string; created_at: Date }>(
      `INSERT INTO projects (name, description) VALUES ($1, $2) ON CONFLICT DO NOTHING
       RETURNING name, description, created_at`,
      [name, description ?? ''],
    );
    const row = res.rows[0];
    if (!row)
      throw new DomainError(ErrorCode.InvalidInput, `project ${JSON.stringify(name)} exists`, {
        path: 'name',
      });
    return { name: row.name, description: row.description, createdAt: row.created_at };
  }

  async createKey(
    by: Principal,
    request: NewKeyRequest,
  ): Promise<{ key: string; record: ApiKeyRecord }> {
    if (!ROLES.includes(request.role))
      throw new DomainError(ErrorCode.InvalidInput, `role: one of ${ROLES.join(', ')}`, {
        path: 'role',
      });
    const project = request.project ?? by.project;
    if (project === null && request.role !== 'admin') {
      throw new DomainError(
        ErrorCode.InvalidInput,
        `project: a ${request.role} key belongs to a project; name one`,
        { path: 'project' },
      );
    }
    if (project !== null && !seesProject(by, project)) throw projectNotFound(project);
    const limit = request.rateLimitPerMinute;
    if (limit !== null && limit !== undefined && !(Number.isInteger(limit) && limit > 0)) {
      throw new DomainError(ErrorCode.InvalidInput, 'rateLimitPerMinute: a positive integer', {
        path: 'rateLimitPerMinute',
      });
    }
    const created = generateApiKey();
    try {
      const record = await this.db.prisma.apiKey.create({
        data: {
          prefix: created.prefix,
          secretHash: Uint8Array.from(created.hash),
          project,
          role: request.role,
          name: request.name ?? '',
          rateLimitPerMinute: limit ?? null,
          createdBy: by.keyId,
        },
      });
      return { key: created.key, record: toRecord(record) };
    } catch (e) {
      // the project foreign key: a project the caller may see but which does not exist
      if ((e as { code?: string }).code === 'P2003') throw projectNotFound(project as string);
      throw e;
    }
  }

  async keys(
    by: Principal,
    project: string | undefined,
    includeRevoked: boolean,
  ): Promise<ApiKeyRecord[]> {
    if (project !== undefined && !seesProject(by, project)) return [];
    const rows = await this.db.prisma.apiKey.findMany({
      where: {
        ...(by.project === null
          ? project === undefined
            ? {}
            : { project }
          : { project: by.project }),
        ...(includeRevoked ? {} : { revokedAt: null }),
      },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    return rows.map(toRecord);
  }

  /** Revokes a key by id or prefix; null when the caller cannot see such a key. */
  async revokeKey(by: Principal, idOrPrefix: string): Promise<ApiKeyRecord | null> {
    const prefix = /^(?:cl_)?([0-9a-f]{8}|op-[0-9a-f]{8})(?:_.*)?$/.exec(idOrPrefix)?.[1];
    const where = isUuid(idOrPrefix) ? { id: idOrPrefix } : prefix ? { prefix } : undefined;
    if (!where) return null;
    const found = await this.db.prisma.apiKey.findUnique({ where });
    if (!found) return null;
    if (found.project === null ? by.project !== null : !seesProject(by, found.project)) return null;
    const revoked = found.revokedAt
      ? found
      : await this.db.prisma.apiKey.update({
          where: { id: found.id },
          data: { revokedAt: new Date() },
        });
    this.liveKeys?.clear();
    return toRecord(revoked);
  }
}

export function projectNotFound(project: string): DomainError {
  return new DomainError(ErrorCode.NotFound, `project ${JSON.stringify(project)} not found`, {
    project,
  });
}

export function checkProjectName(name: string, path: string): void {
  if (!PROJECT_NAME.test(name)) {
    throw new DomainError(
      ErrorCode.InvalidInput,
      `${path}: a project name is 1–63 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit; got ${JSON.stringify(name)}`,
      { path },
    );
  }
}

function toRecord(r: {
  id: string;
  prefix: string;
  name: string;
  project: string | null;
  role: string;
  rateLimitPerMinute: number | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}): ApiKeyRecord {
  return {
    id: r.id,
    prefix: r.prefix,
    name: r.name,
    project: r.project,
    role: r.role as Role,
    rateLimitPerMinute: r.rateLimitPerMinute,
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt,
    revokedAt: r.revokedAt,
  };
}
