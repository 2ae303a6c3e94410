-- The body hash of every event (docs/events.md, "Idempotency"): an event id seen again with the
-- same body is a retry (stored once), with another body a mistake the server refuses (409).
-- SHA-256 of the event's type and canonical data as stored (libs/events/src/event-body-hash.ts).
ALTER TABLE events ADD COLUMN body_hash bytea;

-- Events stored before this migration get their hash from the server at its next start
-- (a backfill in TypeScript: the hash is defined over the canonical JSON the server computes);
-- this index finds them, and is empty once they are done.
CREATE INDEX events_unhashed_idx ON events (run_id, seq) WHERE body_hash IS NULL;

-- Events stay append-only: the one change allowed is filling a missing body hash.
CREATE OR REPLACE FUNCTION refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.body_hash IS NULL AND NEW.body_hash IS NOT NULL
     AND (OLD.run_id, OLD.seq, OLD.id, OLD.type, OLD.iteration, OLD.data, OLD.step_count, OLD.recorded_at)
         IS NOT DISTINCT FROM
         (NEW.run_id, NEW.seq, NEW.id, NEW.type, NEW.iteration, NEW.data, NEW.step_count, NEW.recorded_at) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;
DROP TRIGGER events_append_only ON events;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION refuse_event_change();
