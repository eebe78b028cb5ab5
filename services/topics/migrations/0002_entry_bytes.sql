-- What each entry's content takes in an answer (domain.Content.Size), so that a topic's
-- entries can be kept within domain.MaxTopicBytes without reading their text. Nullable
-- and without a default, so adding it rewrites nothing; rows written before it count by
-- to_json of their text (within a few bytes of the encoder's length).
ALTER TABLE topic_entries ADD COLUMN content_bytes integer;
