-- PostgreSQL twin of query.sql, run on the team archive (`--archive`): the same rows
-- from the same messages, a conversation per machine that pushed it, each with the
-- machine's label, its id and user (`cites` names the id: labels are not unique, so
-- the pages link a row to its machine's copy by the id). Values are bound ($name),
-- never spliced.
-- The archive has no summary tables: the kept messages are grouped here, as the
-- local summaries group them (their day rows summed give the same counts), and the
-- preview is the first user message a harness did not inject over all of the
-- conversation's messages on that machine, as the local `conversation_summary` keeps it.
WITH listed AS (
    SELECT
        machine_id,
        source,
        conversation_id,
        count(*)::integer AS messages,
        min(created) AS first_at,
        max(created) AS last_at,
        max(project) AS project,
        max(conversation_title) AS title,
        max(model) AS model,
        max(machine) AS machine,
        max("user") AS "user"
    FROM all_conversations
    WHERE true
{% if source %}      AND source = $source
{% endif %}{% if project %}      AND project = $project
{% endif %}{% if conversation_id %}      AND conversation_id = $conversation_id
{% endif %}{% if since %}      AND created::date >= CAST($since AS date)
{% endif %}{% if until %}      AND created::date <= CAST($until AS date)
{% endif %}{% if machine %}      AND (machine = $machine OR machine_id = $machine)
{% endif %}{% if user %}      AND "user" = $user
{% endif %}    GROUP BY machine_id, source, conversation_id
),
page AS (
    SELECT *, count(*) OVER ()::integer AS total
    FROM listed
    ORDER BY last_at DESC, source COLLATE "C", conversation_id COLLATE "C",
             machine_id COLLATE "C"
    LIMIT $limit::integer OFFSET $offset::integer
)
SELECT
    p.source,
    p.conversation_id,
    p.project,
    p.title,
    p.model,
    (SELECT substr(a.content, 1, $preview_chars::integer)
       FROM all_conversations a
      WHERE a.machine_id = p.machine_id AND a.source = p.source
        AND a.conversation_id = p.conversation_id
        AND a.role = 'user' AND NOT a.is_injected
      ORDER BY a.msg_index
      LIMIT 1) AS preview,
    p.messages,
    to_char(p.first_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_message,
    to_char(p.last_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_message,
    p.total,
    json_build_object('kind', 'conversation', 'source', p.source,
                      'conversation_id', p.conversation_id,
                      'machine_id', p.machine_id) AS cites,
    p.machine,
    p.machine_id,
    p."user"
FROM page p
ORDER BY p.last_at DESC, p.source COLLATE "C", p.conversation_id COLLATE "C",
         p.machine_id COLLATE "C"
