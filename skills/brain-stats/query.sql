-- Message and conversation counts per group. The group column is picked by structure only.
SELECT
{% if by == "month" %}    strftime(created, '%Y-%m') AS key,
{% elif by == "role" %}    role AS key,
{% else %}    source AS key,
{% endif %}    count(*)::INTEGER AS messages,
    count(DISTINCT (source, conversation_id))::INTEGER AS conversations,
    strftime(min(created), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(created), '%Y-%m-%dT%H:%M:%SZ') AS last_message
FROM all_conversations
GROUP BY key
ORDER BY key
