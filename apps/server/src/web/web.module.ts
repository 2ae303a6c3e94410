import { Module } from '@nestjs/common';
import { CheckpointsModule } from '../checkpoints/checkpoints.module';
import { WebController } from './web.controller';

/** The web app's pages and assets, served by the API's own process on the same port. */
@Module({ imports: [CheckpointsModule], controllers: [WebController] })
export class WebModule {}
