//! The skill host: document parsing, validation, binding, argument checking, rendering.
