-- How many entries each part of the change log holds, written with the part: what a
-- webhook endpoint's backlog sums, part by part, without reading any part's entries.
-- Parts written before it have none (NULL), and are counted from their entries until
-- retention removes them. The index covers the sum, so that it reads no table row:
-- a large part's entries run over pages of their own, which a read of a column after
-- them would walk.
ALTER TABLE change_log ADD COLUMN entries_count INTEGER;
CREATE INDEX change_log_counts ON change_log (workspace_id, position, part, entries_count);
