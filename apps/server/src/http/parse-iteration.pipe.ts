import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { MAX_INT32 } from '@creditlab/events';
import { DomainError, ErrorCode } from '../errors/domain-error';

/**
 * An iteration (or a checkpoint number): a whole number 0 ≤ n < 2^31, from a path parameter (text)
 * or a GraphQL `Int` argument, which GraphQL bounds to 32 bits but not to the non-negative ones.
 */
@Injectable()
export class ParseIterationPipe implements PipeTransform<string | number, number> {
  transform(value: string | number, metadata: ArgumentMetadata): number {
    const n = typeof value === 'number' ? value : /^\d{1,10}$/.test(value) ? Number(value) : NaN;
    if (!(Number.isInteger(n) && n >= 0 && n <= MAX_INT32))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `${metadata.data ?? 'iteration'}: a whole number from 0 to ${MAX_INT32}, got ${JSON.stringify(value)}`,
        { path: metadata.data },
      );
    return n;
  }
}
