-- One conversation in order. Values are bound ($name), never spliced.
-- The id alone is the scan's filter, so the store's index on conversation_id finds
-- the rows; the source is checked on those rows after (with both in the scan, DuckDB
-- read every row: 3x slower at 1M messages, docs/performance.md).
WITH by_id AS MATERIALIZED (
    SELECT
        msg_index, created, role, source, message_id, content, char_count,
        content_type, is_injected
    FROM all_conversations
    WHERE conversation_id = $conversation_id
),
conversation AS (
    SELECT
        *,
        row_number() OVER (ORDER BY msg_index, created, message_id)::INTEGER AS position,
        count(*) OVER ()::INTEGER AS total
    FROM by_id
{% if source %}    WHERE source = $source
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
