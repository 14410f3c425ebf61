-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages, plus the pushing machine's label, id and user. Values are bound
-- ($name), never spliced. `machine` (a label or an id) and `user` keep one machine's
-- or user's messages; the machine id breaks ties between machines holding the same
-- conversation.
WITH conversation AS (
    SELECT
        msg_index, created, role, source, message_id, content, char_count,
        content_type, is_injected, machine, machine_id, "user",
        row_number() OVER (ORDER BY msg_index, created, message_id, machine_id)::integer
            AS position,
        count(*) OVER ()::integer AS total
    FROM all_conversations
    WHERE conversation_id = $conversation_id
{% if source %}      AND source = $source
{% endif %}{% if machine %}      AND (machine = $machine OR machine_id = $machine)
{% endif %}{% if user %}      AND "user" = $user
{% endif %})
SELECT
    msg_index,
    to_char(created, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created,
    role,
    source,
    message_id,
    substr(content, 1, $max_chars::integer) AS content,
    char_count,
    greatest(char_count - length(content), 0) AS cut_at_import,
    content_type,
    is_injected,
    position,
    total,
    machine,
    machine_id,
    "user"
FROM conversation
{% if at %}WHERE position > coalesce(
    (SELECT (position - 1) / $limit::integer * $limit::integer
       FROM conversation WHERE message_id = $at LIMIT 1),
    $offset::integer)
{% else %}WHERE position > $offset::integer
{% endif %}ORDER BY position
LIMIT $limit::integer
