import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { MAX_INT32 } from '@creditlab/events';
import { DomainError, ErrorCode } from '../errors/domain-error';

/** A path parameter that is an iteration (or a checkpoint number): a whole number 0 ≤ n < 2^31. */
@Injectable()
export class ParseIterationPipe implements PipeTransform<string, number> {
  transform(value: string, metadata: ArgumentMetadata): number {
    const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
    if (!(n <= MAX_INT32))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `${metadata.data ?? 'iteration'}: a whole number from 0 to ${MAX_INT32}, got ${JSON.stringify(value)}`,
        { path: metadata.data },
      );
    return n;
  }
}
