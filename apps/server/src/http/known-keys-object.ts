import { z } from 'zod';

/**
 * An object schema that refuses keys it does not name. A query parameter or body field a
 * caller misspells (`?iteration=0` for `iterations`, `param` for `params`) would otherwise be
 * dropped silently, and the answer would be for a request the caller did not make: the whole run
 * exported, advantages under the default parameters. The issue's path names the (first) unknown
 * key, so the message does not repeat it when there is one.
 */
export function knownKeysObject<Shape extends z.ZodRawShape>(
  shape: Shape,
  noun: 'query parameter' | 'field',
) {
  const known = Object.keys(shape).join(', ');
  // `_` is the cache-buster that browsers' and libraries' "no cache" options add to a GET
  // (`?_=1733190000000`): taken and ignored, so that such a client is not refused.
  const taken = noun === 'query parameter' ? { ...shape, _: z.string().optional() } : shape;
  return z.strictObject(taken as Shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown ${noun}${issue.keys.length > 1 ? `s ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : ''}; the ${noun}s here are ${known}`
        : undefined,
  });
}
