//! Reading the segment kinds' file headers and section tables: little-endian integers
//! at a byte offset of a memory-mapped file.

/// The little-endian `u32` at byte `at` of `b`; panics when `b` is shorter than
/// `at + 4`.
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The little-endian `u64` at byte `at` of `b` (as [`u32_at`]).
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}
