-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages. Values are bound ($name), never spliced.
SELECT * FROM (
    SELECT
        conversation_id,
        source,
        max(conversation_title) AS title,
        to_char(min(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_message,
        to_char(max(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_message,
        count(*)::integer AS messages,
        json_build_object('kind', 'conversation', 'source', source,
                          'conversation_id', conversation_id) AS cites
    FROM all_conversations
    WHERE created::date = CAST($date AS date)
{% if source %}      AND source = $source
{% endif %}    GROUP BY source, conversation_id
) AS listed
ORDER BY first_message COLLATE "C" DESC, conversation_id COLLATE "C"
LIMIT $limit
