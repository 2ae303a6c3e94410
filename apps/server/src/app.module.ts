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
import { Metrics } from './operations/metrics';
import { OperationsModule } from './operations/operations.module';
import { AccessModule } from './access/access.module';
import { AdvantagesModule } from './advantages/advantages.module';
import { CheckpointsModule } from './checkpoints/checkpoints.module';
import { CompareModule } from './compare/compare.module';
import { JobsModule } from './jobs/jobs.module';
import { createRolloutLoaders } from './rollouts/rollout-loaders';
import { RolloutsModule } from './rollouts/rollouts.module';
import { createRunLoaders } from './runs/run-loaders';
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
        OperationsModule,
        AccessModule,
        RunsModule,
        RolloutsModule,
        AdvantagesModule,
        JobsModule,
        CompareModule,
        CheckpointsModule,
        WebModule,
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          path: '/graphql',
          autoSchemaFile: true,
          sortSchema: true,
          // Every request carries a key, so the schema is shown to key holders only, production included.
          introspection: true,
          includeStacktraceInErrorResponses: false,
          formatError,
          // Per request: the batch loaders every nested field of that request shares.
          context: ({ req }: { req: Request }) => ({
            req,
            loaders: { ...createRunLoaders(db), ...createRolloutLoaders(db) },
          }),
          validationRules: [
            documentLimitsRule(config.limits.graphqlMaxDepth, config.limits.graphqlMaxFields),
          ],
          // Bounds the work of parsing itself: a document longer than this is refused unread.
          parseOptions: { maxTokens: config.limits.graphqlMaxTokens },
          plugins: [complexityLimitPlugin(config.limits.graphqlMaxCost)],
        }),
      ],
      providers: [{ provide: APP_FILTER, useClass: DomainErrorFilter }],
    };
  }
}
