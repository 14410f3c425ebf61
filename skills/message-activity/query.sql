-- Messages per UTC day, or per UTC month and source. The grouping is picked by
-- structure only; values are bound ($name), never spliced.
SELECT
{% if by == "month" %}    strftime(created, '%Y-%m') AS key,
    source,
{% else %}    strftime(created, '%Y-%m-%d') AS key,
{% endif %}    count(*)::INTEGER AS messages,
    count(DISTINCT (source, conversation_id))::INTEGER AS conversations
FROM all_conversations
WHERE true
{% if since %}  AND created >= CAST($since AS DATE)
{% endif %}{% if until %}  AND created < CAST($until AS DATE) + INTERVAL 1 DAY
{% endif %}{% if project %}  AND project = $project
{% endif %}{% if source %}  AND source = $source
{% endif %}GROUP BY ALL
ORDER BY ALL
