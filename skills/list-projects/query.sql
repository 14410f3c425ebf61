-- Projects, latest activity first. Values are bound ($name), never spliced.
SELECT
    project,
    count(DISTINCT (source, conversation_id))::INTEGER AS conversations,
    count(*)::INTEGER AS messages,
    string_agg(DISTINCT source, ', ' ORDER BY source) AS sources,
    strftime(min(created), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(created), '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    {'kind': 'project', 'project': project} AS cites
FROM all_conversations
WHERE project IS NOT NULL AND project <> ''
{% if project %}  AND project = $project
{% endif %}GROUP BY project
ORDER BY max(created) DESC, project
LIMIT $limit
