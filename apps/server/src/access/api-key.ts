import { createHash, randomBytes } from 'node:crypto';

export const ROLES = ['read', 'write', 'admin'] as const;
/** read: queries; write: also ingest, online advantages, recompute, fork; admin: also keys and projects. */
export type Role = (typeof ROLES)[number];

export const PROJECT_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export interface NewApiKey {
  /** The whole key, shown once. */
  key: string;
  /** Its public part, stored and shown in listings. */
  prefix: string;
  hash: Buffer;
}

/** `cl_<8 hex>_<43 base64url>`: 32 public bits to name the key, 256 secret bits. */
export function generateApiKey(): NewApiKey {
  const prefix = randomBytes(4).toString('hex');
  const key = `cl_${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/**
 * The public part of a key an operator chose (CREDITLAB_ADMIN_KEY): its own prefix when it has our
 * format, else one derived from its hash, so that listings can name it without revealing it.
 */
export function prefixOf(key: string): string {
  return /^cl_([0-9a-f]{8})_/.exec(key)?.[1] ?? `op-${hashApiKey(key).toString('hex').slice(0, 8)}`;
}

/** The key of an `Authorization: Bearer <key>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}
