CREATE TABLE things (id text PRIMARY KEY);
