//! A crate that renames its `savegame` dependency to `sg`, as a game may: `embed_migrations!`
//! must expand to paths through `sg`. Not published; its tests are the check.

#[cfg(test)]
mod tests {
    /// `savegame` reached through a module, as through an engine crate that re-exports it.
    mod engine {
        pub use sg as savegame;
    }

    /// The crate's own story: `migrations/` at the workspace root holds steps 2 and 3.
    fn versions(m: &sg::Migrations) -> Vec<u32> {
        m.steps().iter().map(|s| s.version).collect()
    }

    #[test]
    fn the_macro_finds_a_renamed_dependency() {
        let migrations = sg::embed_migrations!("../../migrations").unwrap();
        assert_eq!(versions(&migrations), [2, 3]);
        migrations.check(3).unwrap();
    }

    #[test]
    fn the_caller_can_name_the_path_to_savegame() {
        let migrations =
            sg::embed_migrations!("../../migrations", crate = self::engine::savegame,).unwrap();
        assert_eq!(versions(&migrations), [2, 3]);
        let trailing_comma = sg::embed_migrations!("../../migrations",).unwrap();
        assert_eq!(versions(&trailing_comma), [2, 3]);
    }
}
