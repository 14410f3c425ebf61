//! Real corpus files (`$SKILLS_CORPUS_DIR`, the bundled samples) read into stores
//! through the importers, for tests outside [`crate::ingest`] that need a store of real
//! data: memo-search's differential test, which as an engine's test does not name the
//! importers itself.

use std::path::PathBuf;

use crate::ingest::memories::{import_paths_with, ImportSummary};
use crate::stores::memories::MemoryStore;
use crate::stores::StoreError;

/// Imports the memory files under `paths` (files or folders) into `store` as `skills
/// memo import` does, without embedding them; bad files are faults in the summary.
///
/// # Errors
/// Store failures.
pub fn import_memories(
    store: &MemoryStore,
    paths: &[PathBuf],
) -> Result<ImportSummary, StoreError> {
    import_paths_with(store, paths, None)
}
