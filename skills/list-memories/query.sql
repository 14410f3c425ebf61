-- Memories, newest first. Values are bound ($name), never spliced.
-- The page's rows are picked first (the `updated` index, no body read) and only those
-- 50 are read whole; the total is a count of its own: a window count over every
-- matching row made the query read and sort them all (60 ms at 10k memories, 0.3 ms
-- so; docs/performance.md "Browse pages at 1M messages"). The tag filter's
-- json_each is run once per memory (materialised), not once per use.
WITH matching AS {% if tag %}MATERIALIZED{% else %}NOT MATERIALIZED{% endif %} (
    SELECT m.rowid AS r, m.updated, m.id
    FROM memories m
    WHERE 1 = 1
{% if type %}      AND m.type = $type
{% endif %}{% if tag %}      AND EXISTS (SELECT 1 FROM json_each(m.tags) t WHERE t.value = $tag)
{% endif %}),
page AS (
    SELECT r FROM matching ORDER BY updated DESC, id LIMIT $limit OFFSET $offset
)
SELECT
    m.id,
    m.title,
    m.type,
    m.tags,
    m.created,
    m.updated,
    substr(m.body, 1, $preview_chars) AS preview,
    length(m.body) AS body_chars,
    (SELECT json_group_array(id) FROM
      (SELECT l.id FROM memory_links l
        WHERE l.target = m.id AND l.rel = 'supersedes' ORDER BY l.id)) AS superseded_by,
    (SELECT count(*) FROM matching) AS total,
    json_object('kind', 'memory', 'id', m.id) AS cites
FROM page p
JOIN memories m ON m.rowid = p.r
ORDER BY m.updated DESC, m.id
