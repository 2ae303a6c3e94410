/**
 * The signed-in API key: kept in sessionStorage (this tab's browser session, gone when it closes),
 * sent only as a bearer header, never put in a URL.
 */
const STORAGE_KEY = 'creditlab.apiKey';
const listeners = new Set<() => void>();

export function currentKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key.trim());
  for (const l of listeners) l();
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  for (const l of listeners) l();
}

export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
