import { Inject } from '@nestjs/common';
import { Args, ID, Mutation, Query, Resolver } from '@nestjs/graphql';
import { ApiKeysService } from './api-keys.service';
import { Caller } from './caller.decorator';
import type { Principal } from './principal';
import { Requires } from './requires.decorator';
import { ApiKey, CreateApiKeyInput, CreatedApiKey, Project, Viewer } from './access.models';

/** Who am I, projects and keys. Key management needs an admin key, confined to its project if it has one. */
@Resolver()
export class AccessResolver {
  constructor(@Inject(ApiKeysService) private readonly keys: ApiKeysService) {}

  @Query(() => Viewer, { description: 'The key of this request.' })
  @Requires('read')
  viewer(@Caller() caller: Principal): Viewer {
    return { ...caller };
  }

  @Query(() => [Project], { description: 'The projects this key sees.' })
  @Requires('read')
  projects(@Caller() caller: Principal): Promise<Project[]> {
    return this.keys.projects(caller);
  }

  @Mutation(() => Project, { description: 'Creates a project (an admin key over every project).' })
  @Requires('admin')
  createProject(
    @Caller() caller: Principal,
    @Args('name') name: string,
    @Args('description', { type: () => String, nullable: true }) description: string | undefined,
  ): Promise<Project> {
    return this.keys.createProject(caller, name, description);
  }

  @Query(() => [ApiKey], { description: 'Keys of the projects this key sees, oldest first.' })
  @Requires('admin')
  apiKeys(
    @Caller() caller: Principal,
    @Args('project', { type: () => String, nullable: true }) project: string | undefined,
    @Args('includeRevoked', { defaultValue: false }) includeRevoked: boolean,
  ): Promise<ApiKey[]> {
    return this.keys.keys(caller, project ?? undefined, includeRevoked);
  }

  @Mutation(() => CreatedApiKey, {
    description: 'Creates a key; the answer is the only time its secret is shown.',
  })
  @Requires('admin')
  async createApiKey(
    @Caller() caller: Principal,
    @Args('input', { type: () => CreateApiKeyInput }) input: CreateApiKeyInput,
  ): Promise<CreatedApiKey> {
    const { key, record } = await this.keys.createKey(caller, input);
    return { key, apiKey: record };
  }

  @Mutation(() => ApiKey, {
    nullable: true,
    description:
      'Revokes a key (by id or prefix) at once in this process, within seconds in others; null if not found.',
  })
  @Requires('admin')
  revokeApiKey(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<ApiKey | null> {
    return this.keys.revokeKey(caller, id);
  }
}
