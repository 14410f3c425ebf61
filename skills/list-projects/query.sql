-- Projects, latest activity first. Values are bound ($name), never spliced.
-- Read from the store's per-project-and-source counts (kept exact by every write),
-- not from the messages: the same counts as count(DISTINCT (source,
-- conversation_id)) and string_agg(DISTINCT source) per project over every message
-- (a conversation has one source, so its sources' conversation counts add up;
-- docs/performance.md "Browse pages at 1M messages").
SELECT
    project,
    sum(conversations)::INTEGER AS conversations,
    sum(messages)::INTEGER AS messages,
    -- The sorted distinct sources as one list, then joined: string_agg(DISTINCT …
    -- ORDER BY …) built a hash table and a sort per project (1.8 -> 1.45 ms a call).
    array_to_string(list_sort(list_distinct(list(source))), ', ') AS sources,
    strftime(min(first_at), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(last_at), '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    {'kind': 'project', 'project': project} AS cites
FROM project_counts
WHERE true
{% if project %}  AND project = $project
{% endif %}GROUP BY project
ORDER BY max(last_at) DESC, project
LIMIT $limit
