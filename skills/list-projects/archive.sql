-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages. Values are bound ($name), never spliced. The archive has no
-- summary tables, so the messages are counted here as the local `project_counts` counts
-- them; a conversation is counted once per machine that pushed it.
SELECT
    project,
    count(DISTINCT (machine_id, source, conversation_id))::integer AS conversations,
    count(*)::integer AS messages,
    string_agg(DISTINCT source, ', ' ORDER BY source) AS sources,
    to_char(min(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_message,
    to_char(max(created), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_message,
    json_build_object('kind', 'project', 'project', project) AS cites
FROM all_conversations
WHERE project IS NOT NULL AND project <> ''
{% if project %}  AND project = $project
{% endif %}GROUP BY project
ORDER BY max(created) DESC, project COLLATE "C"
LIMIT $limit::integer
