-- Conversations, newest activity first. Values are bound ($name), never spliced.
-- Three passes, so that no pass over every message reads a text column: the page is
-- picked from counts and times alone; its conversations' project, title and model
-- (over the messages the filters keep, as the counts) and the row of their first
-- user message come from their own messages; only those rows' content is read. One
-- pass reading the names and the first user message's content for every message
-- was 3x slower at 1M messages (docs/performance.md "Browse pages at 1M messages").
-- With conversation_id (a conversation page's header) its rows are found by the id
-- alone first, through the store's index on it; with the source in the same scan,
-- DuckDB read every row.
WITH {% if conversation_id %}one AS MATERIALIZED (
    SELECT *, rowid AS row_id FROM all_conversations WHERE conversation_id = $conversation_id
),
{% endif %}listed AS (
    SELECT
        source,
        conversation_id,
        count(*)::INTEGER AS messages,
        min(created) AS first_at,
        max(created) AS last_at
    FROM {% if conversation_id %}one{% else %}all_conversations{% endif %}
    WHERE true
{% if source %}      AND source = $source
{% endif %}{% if project %}      AND project = $project
{% endif %}{% if conversation_id %}      AND conversation_id = $conversation_id
{% endif %}{% if since %}      AND created >= CAST($since AS DATE)
{% endif %}{% if until %}      AND created < CAST($until AS DATE) + INTERVAL 1 DAY
{% endif %}    GROUP BY source, conversation_id
),
page AS (
    SELECT *, count(*) OVER ()::INTEGER AS total
    FROM listed
    ORDER BY last_at DESC, source, conversation_id
    LIMIT $limit OFFSET $offset
),
details AS (
    SELECT
        a.source,
        a.conversation_id,
        max(a.project) FILTER (WHERE kept) AS project,
        max(a.conversation_title) FILTER (WHERE kept) AS title,
        max(a.model) FILTER (WHERE kept) AS model,
        arg_min(a.row_id, a.msg_index) FILTER (WHERE a.role = 'user' AND NOT a.is_injected)
            AS first_user
    FROM (
        SELECT *{% if not conversation_id %}, rowid AS row_id{% endif %}, (true
{% if project %}            AND project = $project
{% endif %}{% if since %}            AND created >= CAST($since AS DATE)
{% endif %}{% if until %}            AND created < CAST($until AS DATE) + INTERVAL 1 DAY
{% endif %}        ) AS kept
        FROM {% if conversation_id %}one{% else %}all_conversations{% endif %}
        -- The key filters again: a scan they prune (one conversation's page) stays pruned.
        WHERE true
{% if source %}          AND source = $source
{% endif %}{% if conversation_id %}          AND conversation_id = $conversation_id
{% endif %}    ) a
    SEMI JOIN page p ON a.source = p.source AND a.conversation_id = p.conversation_id
    GROUP BY a.source, a.conversation_id
),
first_user AS (
    SELECT rowid AS first_user, substr(content, 1, $preview_chars) AS preview
    FROM all_conversations
    WHERE rowid IN (SELECT first_user FROM details)
)
SELECT
    p.source,
    p.conversation_id,
    d.project,
    d.title,
    d.model,
    f.preview,
    p.messages,
    strftime(p.first_at, '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(p.last_at, '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    p.total,
    {'kind': 'conversation', 'source': p.source, 'conversation_id': p.conversation_id} AS cites
FROM page p
JOIN details d ON d.source = p.source AND d.conversation_id = p.conversation_id
LEFT JOIN first_user f ON f.first_user = d.first_user
ORDER BY p.last_at DESC, p.source, p.conversation_id
