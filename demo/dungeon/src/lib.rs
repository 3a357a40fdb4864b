//! The dungeon demo as a library: the binary (`src/main.rs`), its tests and its fixture
//! generator all use it. See `main.rs` for how to play.

pub mod app;
pub mod editor;
pub mod model;
pub mod run;
pub mod saves;
pub mod script;
pub mod term;
pub mod ui;
