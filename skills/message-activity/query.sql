-- Messages per UTC day, or per UTC month and source. The grouping is picked by
-- structure only; values are bound ($name), never spliced.
-- Read from the store's summary tables (kept exact by every write), not the messages
-- (docs/performance.md "Browse pages at 1M messages"): the same counts as count(*)
-- and count(DISTINCT (source, conversation_id)) per period over the messages.
-- By month over whole months (since the 1st, no until): the per month and source
-- counts, or with a project the per month, project and source counts (a project
-- page's chart; grouping the project's day rows per conversation took ~4 ms of CPU a
-- call at 1M messages, these rows ~1.7 ms).
-- By day without a project: the per day and source counts.
-- Else with a project, or a range cutting a month: from the per-conversation, day and
-- project rows, counted per conversation and period first, then per period (the date
-- filters fall on UTC day boundaries, so `day` answers them exactly).
{% if by == "month" and (not since or since[8:] == "01") and not until %}-- By month over whole months: one row per month and source (with a project, per
-- month, project and source) is already each answer row, read without a grouping
-- (grouping them took ~0.4 ms more of CPU a call at 1M messages).
SELECT
    strftime(period, '%Y-%m') AS key,
    source,
    messages,
    conversations
FROM {% if project %}project_monthly_counts{% else %}monthly_counts{% endif %}
WHERE true
{% if project %}  AND project = $project
{% endif %}{% if since %}  AND period >= CAST($since AS DATE)
{% endif %}{% if source %}  AND source = $source
{% endif %}ORDER BY period, source
{% elif not project and by != "month" %}SELECT
    strftime(period, '%Y-%m-%d') AS key,
    sum(messages)::INTEGER AS messages,
    sum(conversations)::INTEGER AS conversations
FROM daily_counts
WHERE true
{% if since %}  AND period >= CAST($since AS DATE)
{% endif %}{% if until %}  AND period <= CAST($until AS DATE)
{% endif %}{% if source %}  AND source = $source
{% endif %}GROUP BY ALL
ORDER BY ALL
{% elif by != "month" %}-- By day with a project: a conversation has one row per day and project, so each
-- row is one conversation's day (grouping them per conversation first took 2.5 ms of
-- a project page's chart at 1M messages, 1.0 ms this way).
SELECT
    strftime(day, '%Y-%m-%d') AS key,
    sum(messages)::INTEGER AS messages,
    count(*)::INTEGER AS conversations
FROM conversation_days
WHERE project = $project
{% if since %}  AND day >= CAST($since AS DATE)
{% endif %}{% if until %}  AND day <= CAST($until AS DATE)
{% endif %}{% if source %}  AND source = $source
{% endif %}GROUP BY day
ORDER BY day
{% else %}WITH per_conversation AS (
    SELECT
{% if by == "month" %}        date_trunc('month', day) AS period,
{% else %}        day AS period,
{% endif %}        source,
        conversation_id,
        sum(messages) AS messages
    FROM conversation_days
    WHERE true
{% if since %}      AND day >= CAST($since AS DATE)
{% endif %}{% if until %}      AND day <= CAST($until AS DATE)
{% endif %}{% if project %}      AND project = $project
{% endif %}{% if source %}      AND source = $source
{% endif %}    GROUP BY ALL
)
SELECT
{% if by == "month" %}    strftime(period, '%Y-%m') AS key,
    source,
{% else %}    strftime(period, '%Y-%m-%d') AS key,
{% endif %}    sum(messages)::INTEGER AS messages,
    count(*)::INTEGER AS conversations
FROM per_conversation
GROUP BY ALL
ORDER BY ALL
{% endif %}
