-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages. Times formatted as DuckDB's strftime does; ordered in byte
-- order (COLLATE "C"), as DuckDB orders text.
SELECT * FROM (
    SELECT
{% if by == "month" %}        to_char(created, 'YYYY-MM') AS key,
{% elif by == "role" %}        role AS key,
{% else %}        source AS key,
{% endif %}        count(*)::integer AS messages,
        count(DISTINCT (source, conversation_id))::integer AS conversations,
        to_char(min(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_message,
        to_char(max(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_message
    FROM all_conversations
    GROUP BY 1
) AS stats
ORDER BY key COLLATE "C"
