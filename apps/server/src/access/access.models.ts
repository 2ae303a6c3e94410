import { Field, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import type { Role as RoleName } from './api-key';

export const Role = { read: 'read', write: 'write', admin: 'admin' } as const satisfies Record<
  RoleName,
  RoleName
>;
registerEnumType(Role, {
  name: 'Role',
  description: 'read: queries; write: also ingest, recompute, fork; admin: also keys and projects.',
});

@ObjectType({ description: 'A project: runs and keys belong to one.' })
export class Project {
  @Field() name!: string;
  @Field() description!: string;
  @Field() createdAt!: Date;
}

@ObjectType({ description: 'An API key as listings show it (the secret is never stored).' })
export class ApiKey {
  @Field(() => ID) id!: string;
  @Field({ description: 'The public part: the key reads cl_<prefix>_<secret>.' }) prefix!: string;
  @Field() name!: string;
  @Field(() => String, {
    nullable: true,
    description: 'The only project the key sees; null for an admin key over every project.',
  })
  project!: string | null;
  @Field(() => Role) role!: RoleName;
  @Field(() => Int, {
    nullable: true,
    description: "Requests per minute; null: the server's default.",
  })
  rateLimitPerMinute!: number | null;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) lastUsedAt!: Date | null;
  @Field(() => Date, { nullable: true }) revokedAt!: Date | null;
}

@ObjectType()
export class CreatedApiKey {
  @Field({ description: 'The whole key. Shown this once: only its hash is stored.' }) key!: string;
  @Field(() => ApiKey) apiKey!: ApiKey;
}

@ObjectType({ description: 'The key this request authenticated with.' })
export class Viewer {
  @Field(() => ID) keyId!: string;
  @Field() prefix!: string;
  @Field(() => String, { nullable: true }) project!: string | null;
  @Field(() => Role) role!: RoleName;
  @Field(() => Int, { nullable: true }) rateLimitPerMinute!: number | null;
}

@InputType()
export class CreateApiKeyInput {
  @Field(() => String, {
    nullable: true,
    description:
      "The key's project; omitted: the caller's. An admin key over every project needs no project.",
  })
  project?: string | null;
  @Field(() => Role) role!: RoleName;
  @Field(() => String, {
    nullable: true,
    description: 'What the key is for (a person, a cluster).',
  })
  name?: string | null;
  @Field(() => Int, { nullable: true }) rateLimitPerMinute?: number | null;
}
