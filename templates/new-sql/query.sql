-- Newest messages. Values are bound ($name), never spliced into the SQL text.
SELECT
    strftime(created, '%Y-%m-%dT%H:%M:%SZ') AS created,
    source,
    role,
    conversation_id,
    message_id
FROM all_conversations
{% if role %}WHERE role = $role
{% endif %}ORDER BY created DESC, source, conversation_id, message_id
LIMIT $limit
