-- How many entries each part of the change log holds, written with the part: what a
-- webhook endpoint's backlog sums, part by part, without reading any part's entries
-- (a large part's are kept out of line, TOAST). Parts written before it have none
-- (NULL), and are counted from their entries until retention removes them.
ALTER TABLE change_log ADD COLUMN entries_count INTEGER;
