import { Module } from '@nestjs/common';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { RolloutsModule } from '../rollouts/rollouts.module';
import { AdvantageSetsService } from './advantage-sets.service';
import { AdvantagesController } from './advantages.controller';
import {
  AdvantagesResolver,
  RunAdvantagesResolver,
  StepAdvantagesResolver,
} from './advantages.resolver';
import { EstimatorPool } from './estimator-pool';
import { IterationPacker } from './iteration-packer.service';

/** Any method's advantages on stored rollouts: the registry, advantage sets, the online and read paths. */
@Module({
  imports: [RolloutsModule],
  controllers: [AdvantagesController],
  providers: [
    {
      provide: EstimatorPool,
      inject: [AppConfigToken],
      useFactory: (c: AppConfig) => new EstimatorPool(c.recompute.estimatorThreads),
    },
    AdvantageSetsService,
    IterationPacker,
    AdvantagesResolver,
    RunAdvantagesResolver,
    StepAdvantagesResolver,
  ],
  exports: [AdvantageSetsService],
})
export class AdvantagesModule {}
