ALTER TABLE things ADD COLUMN name text;
