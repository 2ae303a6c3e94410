/** The largest JSON request body (run creation, GraphQL, advantages): large data goes as NDJSON. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
