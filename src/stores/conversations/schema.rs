//! The `all_conversations` table: its columns and the statements that create it.

/// Column list of `all_conversations`, in table order.
pub const COLUMNS: &[&str] = &[
    "source",
    "model",
    "project",
    "conversation_id",
    "conversation_title",
    "created",
    "updated",
    "year",
    "month",
    "day_of_week",
    "hour",
    "message_id",
    "parent_id",
    "msg_index",
    "msg_timestamp",
    "timestamp_is_fallback",
    "role",
    "content_type",
    "is_first",
    "is_last",
    "word_count",
    "char_count",
    "conversation_msg_count",
    "has_code",
    "has_url",
    "has_question",
    "has_attachment",
    "has_citation",
    "content",
    "temporal_precision",
    "is_injected",
];

pub(super) const CREATE_TABLE: &str = "
CREATE TABLE IF NOT EXISTS all_conversations (
    source VARCHAR NOT NULL,
    model VARCHAR,
    project VARCHAR,
    conversation_id VARCHAR NOT NULL,
    conversation_title VARCHAR,
    created TIMESTAMP NOT NULL,
    updated TIMESTAMP NOT NULL,
    year INTEGER NOT NULL,
    month INTEGER NOT NULL,
    day_of_week VARCHAR NOT NULL,
    hour INTEGER NOT NULL,
    message_id VARCHAR NOT NULL,
    parent_id VARCHAR,
    msg_index BIGINT NOT NULL,
    msg_timestamp TIMESTAMP,
    timestamp_is_fallback BOOLEAN NOT NULL,
    role VARCHAR NOT NULL,
    content_type VARCHAR NOT NULL,
    is_first BOOLEAN NOT NULL,
    is_last BOOLEAN NOT NULL,
    word_count INTEGER NOT NULL,
    char_count INTEGER NOT NULL,
    conversation_msg_count INTEGER NOT NULL,
    has_code INTEGER NOT NULL,
    has_url INTEGER NOT NULL,
    has_question INTEGER NOT NULL,
    has_attachment INTEGER NOT NULL,
    has_citation INTEGER NOT NULL,
    content VARCHAR NOT NULL,
    temporal_precision VARCHAR NOT NULL,
    is_injected BOOLEAN NOT NULL DEFAULT false
);
ALTER TABLE all_conversations ADD COLUMN IF NOT EXISTS is_injected BOOLEAN DEFAULT false;
-- One conversation's rows by id (get-conversation, a conversation page): an ART over
-- the one column finds them without reading every id (docs/performance.md, Browse
-- pages at 1M messages); built on the first writable open of an older store.
CREATE INDEX IF NOT EXISTS all_conversations_conversation_id
    ON all_conversations (conversation_id);
-- The store's identity, renewed by every close that wrote rows: a copy of the data
-- folder keeps its search index and embeddings (segments::StoreContent) while it holds
-- the same identity, length and headers as when they were published.
CREATE TABLE IF NOT EXISTS store_identity (id VARCHAR NOT NULL);
INSERT INTO store_identity SELECT uuid()::VARCHAR
    WHERE NOT EXISTS (SELECT 1 FROM store_identity);
CREATE TABLE IF NOT EXISTS ingest_files (
    path VARCHAR PRIMARY KEY,
    format VARCHAR NOT NULL,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    byte_offset BIGINT NOT NULL,
    line BIGINT NOT NULL,
    next_index BIGINT NOT NULL,
    tail_hash VARCHAR NOT NULL,
    context VARCHAR NOT NULL,
    messages BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS ingest_file_conversations (
    path VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    conversation_id VARCHAR NOT NULL,
    PRIMARY KEY (path, source, conversation_id)
);
";
