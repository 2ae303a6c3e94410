-- Embeddings stored once, in the event log (docs/architecture.md, "Choices in the storage layout").
--
-- Before: each step's embedding was written twice, as base64 in its event's log body (the source of
-- truth) and as bytes in its step slice (the projection). With 256-d embeddings that was 2,794 bytes of
-- WAL per ingested step against 1,345 for a plain COPY of the same logical rows, and ingest ran at about
-- 0.45 of that COPY. Now an event whose every step has an embedding of one size is stored with its
-- embeddings as bytes after the body's JSON (body versions 4 and 5, apps/server/src/rollouts/event-body.ts),
-- and its slices hold no embeddings but where they are in that body: embedding_at (the byte offset of the
-- row's first step's vector) and embedding_width (bytes per vector). Bodies are stored uncompressed
-- (STORAGE EXTERNAL), so reading a slice's vectors fetches only the TOAST chunks that hold them.
--
-- Slices written before (and slices of other events) keep their embeddings in `embedding` as before, with
-- embedding_at NULL: nothing stored is rewritten, and PROJECTION_VERSION does not change. The release
-- before cannot read the new bodies (binary after the JSON): no going back past this migration.
ALTER TABLE step_slices
  ADD COLUMN embedding_at    integer,
  ADD COLUMN embedding_width integer;
-- Both set or neither; when set, no embeddings in the row, and whole float32 vectors. NOT VALID: the rows
-- there are have both columns NULL, so the check need not scan them (new rows are checked).
ALTER TABLE step_slices ADD CONSTRAINT step_slices_embeddings_in_one_place
  CHECK ((embedding_at IS NULL) = (embedding_width IS NULL)
         AND (embedding_at IS NULL
              OR (embedding IS NULL AND embedding_at >= 0 AND embedding_width > 0
                  AND embedding_width % 4 = 0)))
  NOT VALID;

-- The steps view as before. A step's embedding in its event's body is read by a subquery of its own:
-- bodies are stored uncompressed (STORAGE EXTERNAL), so it fetches only the TOAST chunks that hold the
-- vector, and a query that does not select embeddings (most: an export without them, a trajectory's
-- rewards) reads none. The iteration reader reads a slice's vectors at once instead
-- (apps/server/src/advantages/iteration-reader.ts).
CREATE OR REPLACE VIEW steps AS
SELECT s.run_id, s.iteration, s.group_ord, s.traj_ord, s.first_idx + (u.k - 1)::integer AS idx, s.seq,
       u.state_id, u.action_id, u.reward, u.nll, u.token_logprobs,
       CASE WHEN s.embedding_at IS NULL THEN u.embedding
            ELSE (SELECT substr(e.body, s.embedding_at + (u.k - 1)::integer * s.embedding_width + 1,
                                s.embedding_width)
                  FROM events e WHERE e.run_id = s.run_id AND e.seq = s.seq) END AS embedding,
       u.value, u.next_state_id, u.next_value, u.extra
FROM step_slices s
CROSS JOIN LATERAL unnest(s.state_id, s.action_id, s.reward, s.nll, s.token_logprobs, s.embedding,
                          s.value, s.next_state_id, s.next_value, s.extra)
  WITH ORDINALITY AS u(state_id, action_id, reward, nll, token_logprobs, embedding, value,
                       next_state_id, next_value, extra, k);
