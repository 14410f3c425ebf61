//! An MCP client's side of a `tools/call` (rmcp): the arguments object, the call and
//! the text of the answer.

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

/// A connected rmcp client without a handler of its own.
pub type Client = RunningService<RoleClient, ()>;

/// `value` (a JSON object) as tool arguments.
pub fn args(value: &Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

/// Calls tool `name` with `arguments` (a JSON object); panics on a protocol error.
pub async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(&arguments)))
        .await
        .unwrap()
}

/// The text blocks of `result`, one a line.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}
