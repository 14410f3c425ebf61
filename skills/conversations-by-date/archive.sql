-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages, a conversation per machine that pushed it, each with the
-- machine's label, its id (also in `cites`: labels are not unique) and user. Values
-- are bound ($name), never spliced. `machine` (a label or an id) and `user` keep one
-- machine's or user's conversations.
SELECT conversation_id, source, title, first_message, last_message, messages, cites,
       machine, machine_id, "user"
FROM (
    SELECT
        conversation_id,
        source,
        max(conversation_title) AS title,
        to_char(min(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_message,
        to_char(max(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_message,
        count(*)::integer AS messages,
        machine,
        "user",
        machine_id,
        json_build_object('kind', 'conversation', 'source', source,
                          'conversation_id', conversation_id,
                          'machine_id', machine_id) AS cites
    FROM all_conversations
    WHERE created::date = CAST($date AS date)
{% if source %}      AND source = $source
{% endif %}{% if machine %}      AND (machine = $machine OR machine_id = $machine)
{% endif %}{% if user %}      AND "user" = $user
{% endif %}    GROUP BY source, conversation_id, machine_id, machine, "user"
) AS listed
ORDER BY first_message COLLATE "C" DESC, conversation_id COLLATE "C", machine_id COLLATE "C"
LIMIT $limit
