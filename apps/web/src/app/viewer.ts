import { useQuery } from '@tanstack/react-query';
import { gql } from '../api/graphql';
import { currentKey } from '../api/session';

export interface Viewer {
  prefix: string;
  project: string | null;
  role: 'read' | 'write' | 'admin';
}

export const fetchViewer = async () =>
  (await gql<{ viewer: Viewer }>('{ viewer { prefix project role } }')).viewer;

/** Who the signed-in key is: its prefix, project and role (write keys may start recomputes). */
export function useViewer(): Viewer | undefined {
  return useQuery({ queryKey: ['viewer', currentKey()], queryFn: fetchViewer, staleTime: Infinity })
    .data;
}

export const canWrite = (v: Viewer | undefined) => v?.role === 'write' || v?.role === 'admin';
