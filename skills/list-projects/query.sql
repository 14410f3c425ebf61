-- Projects, latest activity first. Values are bound ($name), never spliced.
-- Read from the store's per-project-and-source counts (kept exact by every write),
-- not from the messages: the same counts as count(DISTINCT (source,
-- conversation_id)) and string_agg(DISTINCT source) per project over every message
-- (a conversation has one source, so its sources' conversation counts add up;
-- docs/performance.md "Browse pages at 1M messages").
-- One project (a project page's header): its rows aggregated without a grouping (a
-- row per source, so no DISTINCT), none when it has no row — a grouped aggregate
-- took 2.2 ms of CPU a call at 1M messages, this 1.5 ms (docs/performance.md
-- "A project page's header without a grouping").
{% if project %}SELECT
    $project AS project,
    sum(conversations)::INTEGER AS conversations,
    sum(messages)::INTEGER AS messages,
    string_agg(source, ', ' ORDER BY source) AS sources,
    strftime(min(first_at), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(last_at), '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    {'kind': 'project', 'project': $project} AS cites
FROM project_counts
WHERE project = $project
HAVING count(*) > 0
{% else %}SELECT
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
GROUP BY project
ORDER BY max(last_at) DESC, project
LIMIT $limit
{% endif %}
