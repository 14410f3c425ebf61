//! The save → recall loop over MCP with a real client: the built `skills serve` runs
//! as a child process, rmcp's client saves memories with `memo_save` and finds them
//! with `memo_search` and `recall` in the same session, then again after a restart.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Stdio;

use rmcp::model::CallToolResult;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use common::mcp::{call, text, Client};

async fn serve(data: &Path, embedder_none: bool) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skills"));
    cmd.args(["serve", "--no-ingest"])
        .env("SKILLS_DIR", common::repo_skills())
        .env("SKILLS_DATA_DIR", data);
    if embedder_none {
        cmd.env("SKILLS_EMBEDDER", "none");
    } else {
        cmd.env_remove("SKILLS_EMBEDDER");
    }
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

/// memo-search for the okapi memories, superseded ones included.
async fn search_with_superseded(client: &Client) -> CallToolResult {
    call(
        client,
        "memo_search",
        json!({"query": "okapi rainforest", "include_superseded": true}),
    )
    .await
}

fn data(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{}", text(result));
    result.structured_content.clone().unwrap()
}

fn hit_ids(result: &CallToolResult) -> Vec<String> {
    data(result)["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn save_then_recall(embedder_none: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let client = serve(tmp.path(), embedder_none).await;

    let tools = client.list_all_tools().await.unwrap();
    let save_tool = tools.iter().find(|t| t.name == "memo_save").unwrap();
    let ann = save_tool.annotations.as_ref().unwrap();
    assert_eq!(
        (
            ann.read_only_hint,
            ann.destructive_hint,
            ann.idempotent_hint
        ),
        (Some(false), Some(false), Some(true))
    );
    assert_eq!(
        save_tool.input_schema["properties"]["body"]["maxLength"],
        65536
    );
    let recall_tool = tools.iter().find(|t| t.name == "recall").unwrap();
    assert_eq!(
        recall_tool.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );

    // Nothing saved yet: memo-search says the store does not exist; recall skips it.
    let before = call(&client, "memo_search", json!({"query": "okapi"})).await;
    assert_eq!(before.is_error, Some(true), "{}", text(&before));
    let empty = data(&call(&client, "recall", json!({"question": "okapi"})).await);
    assert_eq!(empty["count"], 0);
    assert!(
        empty["notes"].to_string().contains("`memo-search` skipped"),
        "{empty}"
    );

    let memo = json!({"title": "Okapi habitat", "body": "Okapi live in the Ituri rainforest.", "type": "fact", "tags": ["zoo"], "files_read": ["notes/okapi.md"]});
    let saved = data(&call(&client, "memo_save", memo.clone()).await);
    assert_eq!(saved["created"], true);
    assert_eq!(saved["embedded"], !embedder_none);
    let id = saved["id"].as_str().unwrap().to_owned();

    // The same session finds it (the server's index reloads after the write).
    let found = call(&client, "memo_search", json!({"query": "okapi rainforest"})).await;
    assert_eq!(hit_ids(&found), std::slice::from_ref(&id));
    let by_file = call(
        &client,
        "memo_search",
        json!({"query": "okapi", "file": "okapi.md"}),
    )
    .await;
    assert_eq!(hit_ids(&by_file), std::slice::from_ref(&id));

    // Saving again changes nothing.
    let again = call(&client, "memo_save", memo.clone()).await;
    let again_data = data(&again);
    assert_eq!(again_data["created"], false);
    assert_eq!(again_data["status"], "already stored");
    assert!(
        text(&again).starts_with("Already stored"),
        "{}",
        text(&again)
    );

    // A newer memory supersedes it: the default ranking shows only the newer one.
    let newer = data(
        &call(
            &client,
            "memo_save",
            json!({"title": "Okapi habitat", "body": "Okapi live in the Ituri rainforest and nearby forests.", "supersedes": [id]}),
        )
        .await,
    );
    let new_id = newer["id"].as_str().unwrap().to_owned();
    assert_eq!(newer["superseded"], json!([id]));
    let ranked = call(&client, "memo_search", json!({"query": "okapi rainforest"})).await;
    assert_eq!(hit_ids(&ranked), std::slice::from_ref(&new_id));
    let all = search_with_superseded(&client).await;
    assert_eq!(hit_ids(&all).len(), 2);

    // recall: one cited pack, the newer memory first, the older one noted.
    let pack = call(
        &client,
        "recall",
        json!({"question": "where do okapi live", "max_tokens": 200}),
    )
    .await;
    let pack_data = data(&pack);
    let items = pack_data["items"].as_array().unwrap();
    assert_eq!(items[0]["id"], json!(new_id));
    assert!(items[0]["citation"]
        .as_str()
        .unwrap()
        .starts_with(&format!("[memory {new_id} · ")));
    let old = items.iter().find(|i| i["id"] == json!(id)).unwrap();
    assert_eq!(old["note"], json!(format!("superseded by {new_id}")));
    assert!(pack_data["tokens"].as_u64().unwrap() <= 200);
    assert!(
        text(&pack).contains(&format!("[memory {new_id} · ")),
        "{}",
        text(&pack)
    );

    // Refused: a body over the documented size, naming the field; nothing saved.
    let huge = call(&client, "memo_save", json!({"body": "x".repeat(65_537)})).await;
    assert_eq!(huge.is_error, Some(true));
    assert!(text(&huge).contains("`body`"), "{}", text(&huge));
    client.cancel().await.unwrap();

    // After a restart the memories are still there.
    let client = serve(tmp.path(), embedder_none).await;
    let after = search_with_superseded(&client).await;
    assert_eq!(hit_ids(&after).len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_then_search_and_recall_over_mcp_without_a_model() {
    save_then_recall(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_then_search_and_recall_over_mcp_with_the_default_model() {
    // Runs with the local model when it was fetched (`scripts/fetch-model`), else as
    // without one: `embedded` follows.
    let has_model = skills::embed::Embedder::load_default().is_ok();
    if !has_model {
        eprintln!("no local model: this run is the same as the one without a model");
    }
    save_then_recall(!has_model).await;
}

/// What `memo_save`, called over MCP stdio of `skills serve --no-ingest` plus `extra`,
/// stores for a memory holding an AWS key: the title and body in the memories store
/// (read from its SQLite file).
fn stored_by_memo_save(extra: &[&str], key: &str) -> (String, String) {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = common::cli::skills();
    cmd.args(["serve", "--no-ingest"])
        .args(extra)
        .env("SKILLS_DIR", common::repo_skills())
        .env("SKILLS_DATA_DIR", data.path())
        .env("SKILLS_EMBEDDER", "none")
        .env_remove("SKILLS_KEEP_SECRETS")
        .stderr(Stdio::null());
    let mut session = common::serve::StdioSession::spawn(&mut cmd);
    session.initialize(1);
    session.call_tool(
        2,
        "memo_save",
        json!({"title": format!("Deploy key {key}"), "body": format!("The deploy uses {key} for the bucket."), "type": "fact"}),
    );
    let answer = session.answer(2);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["created"], true,
        "{answer}"
    );
    session.close_stdin();
    assert!(session.child.wait().unwrap().success());
    let memories =
        rusqlite::Connection::open(skills::stores::StorePaths::in_dir(data.path()).memories)
            .unwrap();
    let (title, body) = memories
        .query_row("SELECT title, body FROM memories", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    (title, body)
}

/// README: memo-save under `skills serve --keep-secrets` stores secrets as written;
/// under a plain `skills serve` they are redacted before storing.
#[test]
fn serve_keep_secrets_governs_what_memo_save_stores() {
    let key = "AKIAIOSFODNN7EXAMPLE";
    let (title, body) = stored_by_memo_save(&[], key);
    assert_eq!(title, "Deploy key [REDACTED:aws-access-key-id]");
    assert_eq!(
        body,
        "The deploy uses [REDACTED:aws-access-key-id] for the bucket."
    );

    let (title, body) = stored_by_memo_save(&["--keep-secrets"], key);
    assert_eq!(title, format!("Deploy key {key}"));
    assert_eq!(body, format!("The deploy uses {key} for the bucket."));
}
