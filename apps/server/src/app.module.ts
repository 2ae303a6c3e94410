import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { AppConfigToken } from './config/app-config.provider';
import type { AppConfig } from './config/app-config';
import { Database } from './database/database';
import { DomainErrorFilter } from './errors/domain-error.filter';
import { graphqlOptions } from './graphql/graphql-options';
import { Notifications } from './database/notifications';
import { ApiKeysService } from './access/api-keys.service';
import { RateLimits } from './access/rate-limits';
import { Metrics } from './operations/metrics';
import { OperationsModule } from './operations/operations.module';
import { AccessModule } from './access/access.module';
import { AdvantagesModule } from './advantages/advantages.module';
import { CheckpointsModule } from './checkpoints/checkpoints.module';
import { CompareModule } from './compare/compare.module';
import { ExportsModule } from './exports/exports.module';
import { JobsModule } from './jobs/jobs.module';
import { RolloutsModule } from './rollouts/rollouts.module';
import { RunsModule } from './runs/runs.module';
import { WebModule } from './web/web.module';

/** Shared singletons made before Nest starts (the database must be up and migrated first). */
@Module({})
class CoreModule {
  static forRoot(config: AppConfig, db: Database): DynamicModule {
    return {
      module: CoreModule,
      global: true,
      providers: [
        { provide: AppConfigToken, useValue: config },
        { provide: Database, useValue: db },
        { provide: Metrics, useValue: new Metrics(db) },
        Notifications,
      ],
      exports: [AppConfigToken, Database, Metrics, Notifications],
    };
  }
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, db: Database): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(config, db),
        OperationsModule,
        AccessModule,
        RunsModule,
        RolloutsModule,
        AdvantagesModule,
        JobsModule,
        CompareModule,
        CheckpointsModule,
        ExportsModule,
        WebModule,
        GraphQLModule.forRootAsync<ApolloDriverConfig>({
          driver: ApolloDriver,
          inject: [ApiKeysService, RateLimits],
          useFactory: (keys: ApiKeysService, limits: RateLimits) =>
            graphqlOptions(config, db, keys, limits),
        }),
      ],
      providers: [{ provide: APP_FILTER, useClass: DomainErrorFilter }],
    };
  }
}
