-- Messages per UTC day, or per UTC month and source. The grouping is picked by
-- structure only; values are bound ($name), never spliced.
-- Read from the store's per-conversation-and-day summary (kept exact by every write)
-- rather than the messages (docs/performance.md "Browse pages at 1M messages"): the
-- date filters fall on UTC day boundaries, so `day` answers them exactly. Counted per
-- conversation and period first, then per period: the same counts as count(*) and
-- count(DISTINCT (source, conversation_id)) per period over the messages.
WITH per_conversation AS (
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
