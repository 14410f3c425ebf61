-- Conversations, newest activity first. Values are bound ($name), never spliced.
-- Read from the store's summary tables, kept exact by every write (one row per
-- conversation; one per conversation, UTC day and project), not from the messages:
-- grouping all 1M messages took 17-133 ms a call (docs/performance.md "Browse pages
-- at 1M messages"). Without a project or date filter every message of a conversation
-- counts, so its one summary row is the answer; with one, the day rows the filters
-- keep are summed (the date filters fall on UTC day boundaries, and a conversation's
-- messages may differ in project, so both are in that table's key).
-- With a project and no date filter, the conversation's row for that project is read
-- as a top-N (one row per conversation and project; grouping the day rows took
-- 12-30 ms at 1M messages).
-- The preview is the first user message a harness did not inject, over all the
-- conversation's messages (kept to 2,000 characters, preview_chars' maximum).
{% if since or until %}WITH listed AS (
    SELECT
        source,
        conversation_id,
        sum(messages)::INTEGER AS messages,
        min(first_at) AS first_at,
        max(last_at) AS last_at,
        max(project) AS project,
        max(title) AS title,
        max(model) AS model
    FROM conversation_days
    WHERE true
{% if source %}      AND source = $source
{% endif %}{% if project %}      AND project = $project
{% endif %}{% if conversation_id %}      AND conversation_id = $conversation_id
{% endif %}{% if since %}      AND day >= CAST($since AS DATE)
{% endif %}{% if until %}      AND day <= CAST($until AS DATE)
{% endif %}    GROUP BY source, conversation_id
),
page AS MATERIALIZED (
    SELECT *, count(*) OVER ()::INTEGER AS total
    FROM listed
    ORDER BY last_at DESC, source, conversation_id
    LIMIT $limit OFFSET $offset
)
SELECT
    p.source,
    p.conversation_id,
    p.project,
    p.title,
    p.model,
    substr(s.preview, 1, $preview_chars) AS preview,
    p.messages,
    strftime(p.first_at, '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(p.last_at, '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    p.total,
    {'kind': 'conversation', 'source': p.source, 'conversation_id': p.conversation_id} AS cites
FROM page p
-- Only summary rows from the page's oldest time on can be the page's (a conversation's
-- last time over all its messages is at least its last time in any day or project).
JOIN conversation_summary s ON s.source = p.source AND s.conversation_id = p.conversation_id
    AND s.last_at >= (SELECT min(last_at) FROM page)
ORDER BY p.last_at DESC, p.source, p.conversation_id
{% else %}-- One top-N over one summary table — with a project, `conversation_projects` (a
-- row per conversation and project, with the conversation's preview), else
-- `conversation_summary` (a row per conversation) — MATERIALIZED: DuckDB then reads the text of the page's rows only;
-- the total counted apart, without the text columns (beside the top-N in one select,
-- the count made it 3x slower at 1M messages). The page's oldest time is found first,
-- over the times alone, as the smallest of the newest `limit + offset` (`max(x, n)`
-- keeps the n largest, ties included; a top-N subquery over 32,000 times took 3 ms at
-- 1M messages, 1.2 ms this way; `max`'s n stays under its bound of 1,000,000), in the
-- same scan as the total (a scan less: ~0.3 ms of a project's list at 1M messages). One
-- conversation (a page's header) is found by its id alone, once, so the store's index
-- on `conversation_summary.conversation_id` finds it (with the source in the same
-- scan DuckDB reads every id: ~1 ms each at 1M messages), and its total is counted
-- from those rows.
WITH {% if conversation_id %}matched AS MATERIALIZED (
    SELECT *
    FROM {% if project %}conversation_projects{% else %}conversation_summary{% endif %}
    WHERE conversation_id = $conversation_id
),
kept AS (
    SELECT *
    FROM matched
    WHERE true
{% if project %}      AND project = $project
{% endif %}{% if source %}      AND source = $source
{% endif %}),
{% else %}stats AS MATERIALIZED (
    SELECT
        count(*)::INTEGER AS total,
        CASE WHEN $limit + $offset < 1000000
            THEN list_min(max(last_at, least($limit + $offset, 999999)))
            ELSE min(last_at) END AS oldest
    FROM {% if project %}conversation_projects{% else %}conversation_summary{% endif %}
    WHERE true
{% if project %}      AND project = $project
{% endif %}{% if source %}      AND source = $source
{% endif %}),
{% endif %}page AS MATERIALIZED (
    SELECT *
{% if conversation_id %}    FROM kept
{% else %}    FROM {% if project %}conversation_projects{% else %}conversation_summary{% endif %}
    WHERE true
{% if project %}      AND project = $project
{% endif %}{% if source %}      AND source = $source
{% endif %}      AND last_at >= (SELECT oldest FROM stats)
{% endif %}    ORDER BY last_at DESC, source, conversation_id
    LIMIT $limit OFFSET $offset
)
SELECT
    p.source,
    p.conversation_id,
    p.project,
    p.title,
    p.model,
    substr(p.preview, 1, $preview_chars) AS preview,
    p.messages,
    strftime(p.first_at, '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(p.last_at, '%Y-%m-%dT%H:%M:%SZ') AS last_message,
{% if conversation_id %}    (SELECT count(*) FROM kept)::INTEGER AS total,
{% else %}    (SELECT total FROM stats) AS total,
{% endif %}    {'kind': 'conversation', 'source': p.source, 'conversation_id': p.conversation_id} AS cites
FROM page p
ORDER BY p.last_at DESC, p.source, p.conversation_id
{% endif %}
