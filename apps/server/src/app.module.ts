import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import type { Request } from 'express';
import { AppConfigToken } from './config/app-config.provider';
import type { AppConfig } from './config/app-config';
import { Database } from './database/database';
import { DomainErrorFilter } from './errors/domain-error.filter';
import { complexityLimitPlugin, documentLimitsRule } from './graphql/query-limits';
import { formatError } from './graphql/format-error';
import { createReadLoaders } from './graphql/read-loaders';
import { RolloutGroupResolver, TrajectoryResolver } from './graphql/rollouts.resolver';
import { RunsResolver } from './graphql/runs.resolver';
import { AdvantagesModule } from './advantages/advantages.module';
import { IngestModule } from './ingest/ingest.module';
import {
  AdvantagesResolver,
  CompareResolver,
  RunAdvantagesResolver,
  StepAdvantagesResolver,
} from './graphql/advantages.resolver';
import { Metrics } from './metrics/metrics';
import { MetricsController } from './metrics/metrics.controller';
import { HealthController } from './health/health.controller';
import { AccessModule } from './access/access.module';
import { AccessResolver } from './graphql/access.resolver';
import { CheckpointsModule } from './checkpoints/checkpoints.module';
import { RunCheckpointsResolver } from './graphql/checkpoints.resolver';

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
      ],
      exports: [AppConfigToken, Database, Metrics],
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
        AccessModule,
        IngestModule,
        AdvantagesModule,
        CheckpointsModule,
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          path: '/graphql',
          autoSchemaFile: true,
          sortSchema: true,
          // Every request carries a key, so the schema is shown to key holders only, production included.
          introspection: true,
          includeStacktraceInErrorResponses: false,
          formatError,
          context: ({ req }: { req: Request }) => ({ req, loaders: createReadLoaders(db) }),
          validationRules: [
            documentLimitsRule(config.limits.graphqlMaxDepth, config.limits.graphqlMaxFields),
          ],
          // Bounds the work of parsing itself: a document longer than this is refused unread.
          parseOptions: { maxTokens: config.limits.graphqlMaxTokens },
          plugins: [complexityLimitPlugin(config.limits.graphqlMaxCost)],
        }),
      ],
      controllers: [MetricsController, HealthController],
      providers: [
        RunsResolver,
        AccessResolver,
        RunCheckpointsResolver,
        RolloutGroupResolver,
        TrajectoryResolver,
        AdvantagesResolver,
        RunAdvantagesResolver,
        StepAdvantagesResolver,
        CompareResolver,
        { provide: APP_FILTER, useClass: DomainErrorFilter },
      ],
    };
  }
}
