//! What is made from skill folders for people and other hosts: the documentation
//! pages ([`docs`], `skills docs`), new skill folders ([`scaffold`], `skills new`) and
//! spec-clean Agent Skills copies ([`portable`], `skills validate --portable` and
//! `skills export`). Everything here reads documents through [`crate::host`] and
//! runs no skill.

pub mod docs;
pub mod portable;
pub mod scaffold;
