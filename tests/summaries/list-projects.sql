-- Projects, latest activity first. Values are bound ($name), never spliced.
-- Counted per conversation first, then per project: the same counts as
-- count(DISTINCT (source, conversation_id)) and string_agg(DISTINCT source) over
-- every message, several times faster at 1M messages (docs/performance.md "Browse
-- pages at 1M messages").
WITH per_conversation AS (
    SELECT
        project,
        source,
        conversation_id,
        count(*) AS messages,
        min(created) AS first_at,
        max(created) AS last_at
    FROM all_conversations
    WHERE project IS NOT NULL AND project <> ''
{% if project %}      AND project = $project
{% endif %}    GROUP BY project, source, conversation_id
)
SELECT
    project,
    count(*)::INTEGER AS conversations,
    sum(messages)::INTEGER AS messages,
    string_agg(DISTINCT source, ', ' ORDER BY source) AS sources,
    strftime(min(first_at), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(last_at), '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    {'kind': 'project', 'project': project} AS cites
FROM per_conversation
GROUP BY project
ORDER BY max(last_at) DESC, project
LIMIT $limit
