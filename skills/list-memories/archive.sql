-- PostgreSQL twin of query.sql, run on the team archive (`--archive`) over the view
-- all_memories (every machine's pushed memories): the same rows in the same order,
-- a memory once per machine that pushed it (ties after `updated` and id broken by the
-- machine's id), each with the machine's label, its id and user (`cites` names the id
-- too). Values are bound ($name), never spliced. `machine` (a label or an id) and
-- `user` keep that machine's or user's memories — that machine's own local answer.
-- `superseded_by` lists the memories of the same machine that supersede the row's
-- (the links that machine pushed), read in one pass over the memories holding links.
-- Tags are their stored JSON text, read back as a list (`json-columns`).
WITH matching AS MATERIALIZED (
    SELECT m.machine_id, m.id, m.updated
    FROM all_memories m
    WHERE true
{% if type %}      AND m.type = $type
{% endif %}{% if tag %}      AND EXISTS (SELECT 1 FROM json_array_elements_text(m.tags::json) AS t
                  WHERE t = $tag)
{% endif %}{% if machine %}      AND (m.machine = $machine OR m.machine_id = $machine)
{% endif %}{% if user %}      AND m."user" = $user
{% endif %}),
page AS (
    SELECT machine_id, id, updated
    FROM matching
    ORDER BY updated DESC, id COLLATE "C", machine_id COLLATE "C"
    LIMIT $limit::integer OFFSET $offset::integer
),
superseding AS MATERIALIZED (
    SELECT s.machine_id, t.target, s.id
    FROM all_memories s, unnest(s.supersedes) AS t(target)
    WHERE cardinality(s.supersedes) > 0
      AND t.target IN (SELECT id FROM page)
)
SELECT
    m.id,
    m.title,
    m.type,
    m.tags,
    to_char(m.created, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created,
    to_char(m.updated, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS updated,
    substr(m.body, 1, $preview_chars::integer) AS preview,
    length(m.body) AS body_chars,
    array_to_json(ARRAY(
      SELECT x.id FROM superseding x
       WHERE x.machine_id = m.machine_id AND x.target = m.id
       ORDER BY x.id COLLATE "C")) AS superseded_by,
    (SELECT count(*) FROM matching)::integer AS total,
    json_build_object('kind', 'memory', 'id', m.id, 'machine_id', m.machine_id) AS cites,
    m.machine,
    m.machine_id,
    m."user"
FROM page p
JOIN all_memories m ON m.machine_id = p.machine_id AND m.id = p.id
ORDER BY p.updated DESC, p.id COLLATE "C", p.machine_id COLLATE "C"
