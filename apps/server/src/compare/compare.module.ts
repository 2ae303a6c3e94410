import { Module } from '@nestjs/common';
import { AdvantagesModule } from '../advantages/advantages.module';
import { CompareResolver, MethodComparisonResolver, MethodPairResolver } from './compare.resolver';
import { CompareService } from './compare.service';
import { ComparisonReport } from './comparison-report';

/** Several methods side by side on the same stored rollouts. */
@Module({
  imports: [AdvantagesModule],
  providers: [
    CompareService,
    ComparisonReport,
    CompareResolver,
    MethodComparisonResolver,
    MethodPairResolver,
  ],
})
export class CompareModule {}
