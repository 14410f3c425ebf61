//! The MCP Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): the skill
//! entries of `skills/list` and `skills/get`, the `skill://` resources of every file of
//! every skill folder, and `resources/directory/read` over those folders.
//!
//! A [`SkillSet`] is a snapshot taken from loaded [`Skill`]s: it holds every file's
//! bytes, so `resources/read` serves exactly the bytes whose `sha256:` digest and size
//! the entry announced, even while the folder changes on disk (a reload builds a new
//! set). Only skills the host loaded are served; a broken document is not a skill here.
//!
//! Shapes (rmcp's SEP-2640 types): an entry is `{uri: "skill://<name>/SKILL.md",
//! frontmatter: <the SKILL.md YAML as JSON, verbatim>, resources: [{uri, digest:
//! "sha256:<64 hex>", size: <bytes>}…]}`, `SKILL.md` first, then every other file of
//! the folder (recursively, hidden names skipped) in path order. Host-specific
//! frontmatter fields are repeated on the `SKILL.md` resource under `_meta`, keyed
//! `io.modelcontextprotocol.skills/<field>`.
//!
//! Knows nothing of transports or engines; `mcp` maps these answers onto its handler.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{
    GetSkillResult, JsonObject, ListSkillsResult, MetaObject, ReadResourceDirectoryResult,
    ReadResourceResult, Resource, ResourceContents, SkillFrontmatter, SkillResource,
    SkillResources, DIRECTORY_MIME_TYPE,
};
use rmcp::ErrorData;
use serde_json::Value;

use crate::host::agent_skills::AGENT_SKILLS_FIELDS;
use crate::host::{Diagnostic, Skill};
use crate::walk::{files_below, Hidden};

/// The `_meta` key prefix SEP-2640 reserves for skill resources.
pub const META_PREFIX: &str = "io.modelcontextprotocol.skills/";

/// Files per skill above which the skill is not served (SEP-2640 "Limits").
pub const FILE_LIMIT: usize = 512;

/// Bytes per skill above which the skill is not served (SEP-2640 "Limits": 16 MiB).
pub const BYTE_LIMIT: u64 = 16 * 1024 * 1024;

/// One served file: its bytes and MIME type.
#[derive(Debug, Clone)]
struct File {
    bytes: Arc<[u8]>,
    mime_type: &'static str,
}

/// The skills and files served at one moment (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct SkillSet {
    /// Entries in host order (skill folder name).
    skills: Vec<rmcp::model::Skill>,
    /// Every file as a resource, skill by skill, `SKILL.md` first.
    listed: Vec<Resource>,
    files: HashMap<String, File>,
    /// Directory URI (no trailing slash) → its direct children.
    directories: HashMap<String, Vec<Resource>>,
}

impl SkillSet {
    /// Reads every file of every skill folder.
    ///
    /// A skill whose folder cannot be read completely, or that exceeds [`FILE_LIMIT`] or
    /// [`BYTE_LIMIT`], is left out and reported as a [`Diagnostic`] (its tool is still
    /// served; only its SEP-2640 entry and resources are missing).
    pub fn from_skills(skills: &[Skill]) -> (Self, Vec<Diagnostic>) {
        let mut set = Self::default();
        let mut problems = Vec::new();
        for skill in skills {
            match read_skill(skill) {
                Ok(files) => set.add(skill, files),
                Err(reason) => problems.push(Diagnostic::new(
                    &skill.doc.path,
                    "",
                    None,
                    format!("not served as an MCP skill: {reason}"),
                )),
            }
        }
        (set, problems)
    }

    fn add(&mut self, skill: &Skill, files: Vec<(String, Vec<u8>)>) {
        let name = skill.name();
        let root = format!("skill://{name}");
        let skill_uri = format!("{root}/SKILL.md");
        let mut manifest = Vec::with_capacity(files.len());
        let mut dirs: BTreeMap<String, BTreeSet<(String, bool)>> = BTreeMap::new();
        dirs.entry(String::new()).or_default();
        for (rel, bytes) in files {
            let uri = format!("{root}/{rel}");
            let size = bytes.len() as u64;
            manifest.push(SkillResource::from_bytes(uri.clone(), &bytes));
            let mime_type = mime_for(&rel);
            let file_name = rel.rsplit('/').next().unwrap_or(&rel).to_owned();
            let mut resource = Resource::new(uri.clone(), format!("{name}/{rel}"))
                .with_mime_type(mime_type)
                .with_size(size);
            if rel == "SKILL.md" {
                name.clone_into(&mut resource.name);
                resource = resource.with_description(skill.meta.description.clone());
                if let Some(title) = &skill.meta.title {
                    resource = resource.with_title(title.clone());
                }
                let meta = host_fields_meta(&skill.doc.frontmatter);
                if !meta.is_empty() {
                    resource = resource.with_meta(MetaObject(meta));
                }
            }
            self.listed.push(resource);
            self.files.insert(
                uri,
                File {
                    bytes: bytes.into(),
                    mime_type,
                },
            );
            // Register the file in its folder and every folder in its parent chain.
            let mut child = (file_name, false);
            let mut parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_owned();
            loop {
                dirs.entry(parent.clone()).or_default().insert(child);
                if parent.is_empty() {
                    break;
                }
                let (up, last) = parent
                    .rsplit_once('/')
                    .map_or((String::new(), parent.clone()), |(u, l)| {
                        (u.to_owned(), l.to_owned())
                    });
                child = (last, true);
                parent = up;
            }
        }
        for (dir, children) in dirs {
            let dir_uri = if dir.is_empty() {
                root.clone()
            } else {
                format!("{root}/{dir}")
            };
            let listing = children
                .into_iter()
                .map(|(child, is_dir)| {
                    let uri = format!("{dir_uri}/{child}");
                    if is_dir {
                        Resource::new(uri, child).with_mime_type(DIRECTORY_MIME_TYPE)
                    } else {
                        let file = &self.files[&uri];
                        Resource::new(uri, child)
                            .with_mime_type(file.mime_type)
                            .with_size(file.bytes.len() as u64)
                    }
                })
                .collect();
            self.directories.insert(dir_uri, listing);
        }
        let mut frontmatter = SkillFrontmatter::new(name, skill.meta.description.clone());
        if let Value::Object(fields) = &skill.doc.frontmatter {
            for (key, value) in fields {
                if key != "name" && key != "description" {
                    frontmatter.extra.insert(key.clone(), value.clone());
                }
            }
        }
        self.skills.push(rmcp::model::Skill::new(
            skill_uri,
            frontmatter,
            SkillResources::Files(manifest),
        ));
    }

    /// The entries, in host order.
    pub fn skills(&self) -> &[rmcp::model::Skill] {
        &self.skills
    }

    /// The answer to `skills/list`: every entry on one page.
    pub fn list(&self) -> ListSkillsResult {
        ListSkillsResult::with_all_items(self.skills.clone())
    }

    /// The answer to `skills/get`.
    ///
    /// # Errors
    /// `-32602` (invalid params) naming the URI when no skill is served there.
    pub fn get(&self, uri: &str) -> Result<GetSkillResult, ErrorData> {
        self.skills
            .iter()
            .find(|s| s.uri == uri)
            .map(|s| GetSkillResult::new(s.clone()))
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("no skill is served at `{uri}`; skills are `skill://<name>/SKILL.md`"),
                    Some(serde_json::json!({"uri": uri})),
                )
            })
    }

    /// Every file of every skill, for `resources/list`.
    pub fn resources(&self) -> &[Resource] {
        &self.listed
    }

    /// The answer to `resources/read` for a served file: text when the bytes are
    /// UTF-8 without NUL, else base64 `blob`; `None` when `uri` is not served.
    pub fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let file = self.files.get(uri)?;
        let text = std::str::from_utf8(&file.bytes)
            .ok()
            .filter(|t| !t.contains('\0'));
        let contents = match text {
            Some(text) => ResourceContents::text(text, uri),
            None => ResourceContents::blob(
                base64::engine::general_purpose::STANDARD.encode(&file.bytes),
                uri,
            ),
        };
        Some(ReadResourceResult::new(vec![
            contents.with_mime_type(file.mime_type)
        ]))
    }

    /// The answer to `resources/directory/read`: the direct children of a skill
    /// folder or one of its subfolders (`skill://<name>`, `skill://<name>/references`).
    ///
    /// # Errors
    /// `-32602` naming the URI when it is not such a folder.
    pub fn read_directory(&self, uri: &str) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.directories
            .get(uri)
            .map(|children| ReadResourceDirectoryResult::with_all_items(children.clone()))
            .ok_or_else(|| {
                let why = if self.files.contains_key(uri) {
                    "is a file, not a directory resource"
                } else {
                    "is not a served directory; skill folders are `skill://<name>`"
                };
                ErrorData::invalid_params(
                    format!("`{uri}` {why}"),
                    Some(serde_json::json!({"uri": uri})),
                )
            })
    }
}

/// The files of a skill folder as (`/`-separated path relative to the folder, bytes),
/// `SKILL.md` first, then by path.
fn read_skill(skill: &Skill) -> Result<Vec<(String, Vec<u8>)>, String> {
    let dir = skill.dir();
    let walked = files_below(dir, Hidden::Skip);
    if let Some((path, e)) = walked.unreadable.first() {
        return Err(format!("cannot read folder `{}`: {e}", path.display()));
    }
    if walked.files.len() > FILE_LIMIT {
        return Err(format!(
            "{} files, more than the {FILE_LIMIT} a skill may have",
            walked.files.len()
        ));
    }
    let mut files = Vec::with_capacity(walked.files.len());
    let mut total = 0u64;
    for path in &walked.files {
        // A link that leaves the folder is never served (README, "Security").
        if !crate::confine::is_file_inside(dir, path) {
            continue;
        }
        let rel = relative(dir, path)?;
        let bytes = fs_err::read(path).map_err(|e| e.to_string())?;
        total += bytes.len() as u64;
        if total > BYTE_LIMIT {
            return Err(format!("more than {BYTE_LIMIT} bytes of files"));
        }
        files.push((rel, bytes));
    }
    files.sort_by(|a, b| (a.0 != "SKILL.md", &a.0).cmp(&(b.0 != "SKILL.md", &b.0)));
    if files.first().map(|f| f.0.as_str()) != Some("SKILL.md") {
        return Err("no `SKILL.md` in the folder".to_owned());
    }
    Ok(files)
}

fn relative(dir: &Path, path: &Path) -> Result<String, String> {
    let rel = path
        .strip_prefix(dir)
        .map_err(|_| format!("`{}` is outside the skill folder", path.display()))?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    parts
        .map(|p| p.join("/"))
        .ok_or_else(|| format!("`{}` is not a UTF-8 path", path.display()))
}

/// The host's own frontmatter fields (not Agent Skills ones) keyed under [`META_PREFIX`].
fn host_fields_meta(frontmatter: &Value) -> JsonObject {
    let mut meta = JsonObject::new();
    if let Value::Object(fields) = frontmatter {
        for (key, value) in fields {
            if !AGENT_SKILLS_FIELDS.contains(&key.as_str()) {
                meta.insert(format!("{META_PREFIX}{key}"), value.clone());
            }
        }
    }
    meta
}

/// The MIME type served for a file name.
pub fn mime_for(file: &str) -> &'static str {
    match file.rsplit('.').next().unwrap_or("") {
        "md" => "text/markdown",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "sql" => "application/sql",
        "html" => "text/html",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_follow_extensions() {
        assert_eq!(mime_for("SKILL.md"), "text/markdown");
        assert_eq!(mime_for("template.md.j2"), "text/plain");
        assert_eq!(mime_for("schema.json"), "application/json");
        assert_eq!(mime_for("query.sql"), "application/sql");
    }
}
