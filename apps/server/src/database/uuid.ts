const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `s` can be a uuid column's value: anything else would make PostgreSQL raise instead of find nothing. */
export const isUuid = (s: string): boolean => UUID.test(s);
