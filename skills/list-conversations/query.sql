-- Conversations, newest activity first. Values are bound ($name), never spliced.
WITH listed AS (
    SELECT
        source,
        conversation_id,
        max(project) AS project,
        max(conversation_title) AS title,
        max(model) AS model,
        count(*)::INTEGER AS messages,
        min(created) AS first_at,
        max(created) AS last_at
    FROM all_conversations
    WHERE true
{% if source %}      AND source = $source
{% endif %}{% if project %}      AND project = $project
{% endif %}{% if conversation_id %}      AND conversation_id = $conversation_id
{% endif %}{% if since %}      AND created >= CAST($since AS DATE)
{% endif %}{% if until %}      AND created < CAST($until AS DATE) + INTERVAL 1 DAY
{% endif %}    GROUP BY source, conversation_id
),
page AS (
    SELECT *, count(*) OVER ()::INTEGER AS total
    FROM listed
    ORDER BY last_at DESC, source, conversation_id
    LIMIT $limit OFFSET $offset
),
first_user AS (
    SELECT a.source, a.conversation_id,
           arg_min(substr(a.content, 1, $preview_chars), a.msg_index) AS preview
    FROM all_conversations a
    SEMI JOIN page p ON a.source = p.source AND a.conversation_id = p.conversation_id
    WHERE a.role = 'user' AND NOT a.is_injected
    GROUP BY a.source, a.conversation_id
)
SELECT
    p.source,
    p.conversation_id,
    p.project,
    p.title,
    p.model,
    f.preview,
    p.messages,
    strftime(p.first_at, '%Y-%m-%dT%H:%M:%SZ') AS first_message,
    strftime(p.last_at, '%Y-%m-%dT%H:%M:%SZ') AS last_message,
    p.total,
    {'kind': 'conversation', 'source': p.source, 'conversation_id': p.conversation_id} AS cites
FROM page p
LEFT JOIN first_user f ON f.source = p.source AND f.conversation_id = p.conversation_id
ORDER BY p.last_at DESC, p.source, p.conversation_id
