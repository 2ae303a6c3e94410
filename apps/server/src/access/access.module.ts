import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { AccessResolver } from './access.resolver';
import { ApiKeysService } from './api-keys.service';
import { ProjectScope } from './project-scope.service';
import { RateLimits } from './rate-limits';
import { RolesGuard } from './roles.guard';

/** Keys, roles and project confinement, for every module. */
@Global()
@Module({
  providers: [
    AccessResolver,
    ApiKeysService,
    ProjectScope,
    {
      provide: RateLimits,
      inject: [AppConfigToken],
      useFactory: (c: AppConfig) => new RateLimits(c.access.rateLimitPerMinute),
    },
    { provide: APP_GUARD, useClass: RolesGuard },
  ],
  exports: [ApiKeysService, ProjectScope, RateLimits],
})
export class AccessModule {}
