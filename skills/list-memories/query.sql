-- Memories, newest first. Values are bound ($name), never spliced.
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
    count(*) OVER () AS total,
    json_object('kind', 'memory', 'id', m.id) AS cites
FROM memories m
WHERE 1 = 1
{% if type %}  AND m.type = $type
{% endif %}{% if tag %}  AND EXISTS (SELECT 1 FROM json_each(m.tags) t WHERE t.value = $tag)
{% endif %}ORDER BY m.updated DESC, m.id
LIMIT $limit OFFSET $offset
