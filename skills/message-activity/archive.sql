-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages. The grouping is picked by structure only; values are bound
-- ($name), never spliced. The archive has no summary tables, so the kept messages are
-- counted here per UTC day, or per UTC month and source, as the local summaries count
-- them; a conversation is counted once per machine that pushed it.
SELECT
{% if by == "month" %}    to_char(created, 'YYYY-MM') AS key,
    source,
{% else %}    to_char(created, 'YYYY-MM-DD') AS key,
{% endif %}    count(*)::integer AS messages,
    count(DISTINCT (machine_id, source, conversation_id))::integer AS conversations
FROM all_conversations
WHERE true
{% if since %}  AND created::date >= CAST($since AS date)
{% endif %}{% if until %}  AND created::date <= CAST($until AS date)
{% endif %}{% if project %}  AND project = $project
{% endif %}{% if source %}  AND source = $source
{% endif %}GROUP BY 1{% if by == "month" %}, 2{% endif %}
ORDER BY 1{% if by == "month" %}, 2{% endif %}
