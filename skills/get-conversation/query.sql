-- One conversation in order. Values are bound ($name), never spliced.
SELECT
    msg_index,
    strftime(created, '%Y-%m-%dT%H:%M:%SZ') AS created,
    role,
    source,
    message_id,
    substr(content, 1, $max_chars) AS content,
    char_count
FROM all_conversations
WHERE conversation_id = $conversation_id
ORDER BY msg_index, created, message_id
LIMIT $limit OFFSET $offset
