-- One conversation in order. Values are bound ($name), never spliced.
WITH conversation AS (
    SELECT
        msg_index, created, role, source, message_id, content, char_count,
        content_type, is_injected,
        row_number() OVER (ORDER BY msg_index, created, message_id)::INTEGER AS position,
        count(*) OVER ()::INTEGER AS total
    FROM all_conversations
    WHERE conversation_id = $conversation_id
{% if source %}      AND source = $source
{% endif %})
SELECT
    msg_index,
    strftime(created, '%Y-%m-%dT%H:%M:%SZ') AS created,
    role,
    source,
    message_id,
    substr(content, 1, $max_chars) AS content,
    char_count,
    -- Characters of the source's text the store does not hold (cut at import).
    greatest(char_count - length(conversation.content), 0) AS cut_at_import,
    content_type,
    is_injected,
    position,
    total
FROM conversation
{% if at %}WHERE position > coalesce(
    (SELECT (position - 1) // $limit * $limit FROM conversation WHERE message_id = $at LIMIT 1),
    $offset)
{% else %}WHERE position > $offset
{% endif %}ORDER BY position
LIMIT $limit
