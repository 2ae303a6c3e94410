import { Module } from '@nestjs/common';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { IngestModule } from '../ingest/ingest.module';
import { AdvantageSetsService } from './advantage-sets.service';
import { AdvantagesController } from './advantages.controller';
import { CompareService } from './compare.service';
import { EstimatorPool } from './estimator-pool';
import { RecomputeService } from './recompute.service';

@Module({
  imports: [IngestModule],
  controllers: [AdvantagesController],
  providers: [
    {
      provide: EstimatorPool,
      inject: [AppConfigToken],
      useFactory: (c: AppConfig) => new EstimatorPool(c.recompute.estimatorThreads),
    },
    AdvantageSetsService,
    RecomputeService,
    CompareService,
  ],
  exports: [AdvantageSetsService, RecomputeService, CompareService],
})
export class AdvantagesModule {}
