-- PostgreSQL twin of query.sql, run on the team archive (`--archive`) over the view
-- all_memories (every machine's pushed memories): the same row from the same memory,
-- plus the pushing machine's label, id and user (`cites` names the id too). Values are
-- bound ($name), never spliced.
-- A memory is held once per machine that pushed it: the copy answered is the most
-- recently updated one (then the smallest machine id); `machine` (a label or an id)
-- and `user` pick that machine's or user's copy. Its links are those the same machine
-- pushed: `supersedes` and the conversation from its own lists, `superseded_by` from
-- that machine's memories that list it — its local answer on that machine.
-- Tags and file lists are their stored JSON text, read back as lists (`json-columns`).
WITH copy AS (
    SELECT *
    FROM all_memories m
    WHERE m.id = $id
{% if machine %}      AND (m.machine = $machine OR m.machine_id = $machine)
{% endif %}{% if user %}      AND m."user" = $user
{% endif %}    ORDER BY m.updated DESC, m.machine_id COLLATE "C"
    LIMIT 1
)
SELECT
    m.id,
    m.title,
    m.type,
    m.tags,
    to_char(m.created, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created,
    to_char(m.updated, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS updated,
    substr(m.body, 1, $max_chars::integer) AS body,
    length(m.body) AS body_chars,
    m.files_read,
    m.files_modified,
    m.origin,
    (SELECT c FROM unnest(m.conversations) AS c
      ORDER BY c COLLATE "C" LIMIT 1) AS conversation_id,
    array_to_json(ARRAY(
      SELECT s FROM unnest(m.supersedes) AS s ORDER BY s COLLATE "C")) AS supersedes,
    array_to_json(ARRAY(
      SELECT s.id FROM all_memories s
       WHERE s.machine_id = m.machine_id AND m.id = ANY (s.supersedes)
       ORDER BY s.id COLLATE "C")) AS superseded_by,
    json_build_object('kind', 'memory', 'id', m.id, 'machine_id', m.machine_id) AS cites,
    m.machine,
    m.machine_id,
    m."user"
FROM copy m
