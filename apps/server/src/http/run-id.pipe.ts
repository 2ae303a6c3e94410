import { Injectable, type PipeTransform } from '@nestjs/common';

/**
 * A run id from a path, in lower case as PostgreSQL writes a uuid: the same run typed in capitals
 * must make the same derived names (a checkpoint's event id and path, an object's key), not new
 * ones. Anything else is left as it came, for the route to refuse as it does.
 */
@Injectable()
export class RunIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    return /^[0-9a-f-]{36}$/i.test(value) ? value.toLowerCase() : value;
  }
}
