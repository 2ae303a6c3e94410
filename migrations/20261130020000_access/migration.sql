-- Projects and API keys (docs/architecture.md, "Access").
-- A run belongs to one project; a key belongs to one project, or to none when it is an admin key
-- over every project. Keys are stored as the SHA-256 of the whole key: they are 256-bit random
-- strings, so a fast hash is enough (slow hashes protect guessable passwords) and lets a request be
-- authenticated with one indexed lookup.

CREATE TABLE projects (
  name        text        PRIMARY KEY,
  description text        NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The default project, and the projects runs were created in before access control existed.
INSERT INTO projects (name) VALUES ('default');
INSERT INTO projects (name) SELECT DISTINCT project FROM runs ON CONFLICT DO NOTHING;
ALTER TABLE runs ADD CONSTRAINT runs_project_fkey FOREIGN KEY (project) REFERENCES projects (name);

CREATE TABLE api_keys (
  id                    uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  -- the public part of the key (cl_<prefix>_<secret>), shown in listings and logs
  prefix                text        NOT NULL UNIQUE,
  secret_hash           bytea       NOT NULL UNIQUE,
  project               text        REFERENCES projects (name),
  role                  text        NOT NULL CHECK (role IN ('read', 'write', 'admin')),
  name                  text        NOT NULL DEFAULT '',
  -- requests per minute; null: the server's default (CREDITLAB_RATE_LIMIT_PER_MINUTE)
  rate_limit_per_minute integer     CHECK (rate_limit_per_minute > 0),
  created_by            uuid        REFERENCES api_keys (id),
  created_at            timestamptz NOT NULL DEFAULT now(),
  last_used_at          timestamptz,
  revoked_at            timestamptz,
  CHECK (project IS NOT NULL OR role = 'admin')
);
CREATE INDEX api_keys_project_idx ON api_keys (project, created_at);
