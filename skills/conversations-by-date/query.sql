-- Distinct conversations with messages on one UTC date. Values are bound ($name), never spliced.
SELECT
    conversation_id,
    source,
    max(conversation_title) AS title,
    strftime(min(created), '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(max(created), '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    count(*)::INTEGER AS messages,
    {'kind': 'conversation', 'source': source, 'conversation_id': conversation_id} AS cites
FROM all_conversations
WHERE CAST(created AS DATE) = CAST($date AS DATE)
{% if source %}  AND source = $source
{% endif %}GROUP BY source, conversation_id
ORDER BY first_message DESC, conversation_id
LIMIT $limit
