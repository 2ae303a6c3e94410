import { useQuery } from '@tanstack/react-query';
import { loadCapabilities, type Capabilities } from '../api/capabilities';
import { currentKey } from '../api/session';

/** The server's capabilities for the signed-in key (undefined while loading). */
export function useCaps(): Capabilities | undefined {
  const key = currentKey() ?? '';
  return useQuery({
    queryKey: ['caps', key],
    queryFn: () => loadCapabilities(key),
    staleTime: Infinity,
  }).data;
}
