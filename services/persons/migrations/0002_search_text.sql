-- search_text is written by the service from now on, lower-cased with Unicode rules:
-- under the C locale (how the clusters are initialised) PostgreSQL's lower() folds ASCII
-- letters only, so "Émile" was found neither by "émile" nor by "Émile". Existing rows
-- keep their value until their next change.
ALTER TABLE persons ALTER COLUMN search_text DROP EXPRESSION;
ALTER TABLE persons ALTER COLUMN search_text SET NOT NULL;

-- A query of 1 or 2 characters has no trigram for persons_search to look up. This index
-- holds each person's characters and pairs of adjacent characters, so such a query is an
-- index lookup too: "ab" occurs in a text exactly when the pair "ab" does. (GIN keeps
-- each distinct element once.) The function is costly row by row: the service uses it
-- only when the planner looks the query up in the index (see adapters.SearchPersons).
CREATE FUNCTION persons_short_grams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT ARRAY(SELECT substr(t, i, n)
                       FROM generate_series(1, 2) AS n, generate_series(1, length(t) - n + 1) AS i) $$;

CREATE INDEX persons_search_short ON persons USING gin (persons_short_grams(search_text));
