import { Module } from '@nestjs/common';
import { AdvantagesModule } from '../advantages/advantages.module';
import { ExportController } from './export.controller';
import { RunExportService } from './run-export.service';

/** Runs exported as CSV or Parquet files, streamed. */
@Module({
  imports: [AdvantagesModule],
  controllers: [ExportController],
  providers: [RunExportService],
})
export class ExportsModule {}
