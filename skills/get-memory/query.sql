-- One memory with its links. Values are bound ($name), never spliced.
SELECT
    m.id,
    m.title,
    m.type,
    m.tags,
    m.created,
    m.updated,
    substr(m.body, 1, $max_chars) AS body,
    length(m.body) AS body_chars,
    m.files_read,
    m.files_modified,
    m.origin,
    (SELECT l.target FROM memory_links l
      WHERE l.id = m.id AND l.rel = 'conversation' ORDER BY l.target LIMIT 1) AS conversation_id,
    (SELECT json_group_array(target) FROM
      (SELECT l.target FROM memory_links l
        WHERE l.id = m.id AND l.rel = 'supersedes' ORDER BY l.target)) AS supersedes,
    (SELECT json_group_array(id) FROM
      (SELECT l.id FROM memory_links l
        WHERE l.target = m.id AND l.rel = 'supersedes' ORDER BY l.id)) AS superseded_by,
    json_object('kind', 'memory', 'id', m.id) AS cites
FROM memories m
WHERE m.id = $id
