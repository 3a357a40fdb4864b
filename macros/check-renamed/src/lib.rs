//! A crate that renames its `savegame` dependency to `sg`, as a game may: `embed_migrations!`
//! and the derives must expand to paths through `sg`. Not published; its tests are the check.
//! It has no dependency on serde of its own: the derived memento reaches serde through `sg`.

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

    /// A derived originator and a derived group, under the renamed crate.
    #[derive(sg::Originator, Default, Debug, PartialEq)]
    struct Player {
        health: u32,
        #[savegame(skip)]
        cursor: u8,
    }

    #[derive(sg::SaveState, Default, Debug, PartialEq)]
    struct Game {
        player: Player,
        #[savegame(id = "hero")]
        other: Player,
    }

    /// The same, with the path given, as through an engine crate's re-export.
    #[derive(sg::Originator, Default, Debug, PartialEq)]
    #[savegame(crate = "self::engine::savegame")]
    struct Clock {
        turn: u64,
    }

    #[derive(sg::SaveState, Default)]
    #[savegame(crate = "self::engine::savegame")]
    struct Timed {
        clock: Clock,
    }

    #[test]
    fn the_derives_find_a_renamed_dependency() {
        use sg::{Originator, SaveState};
        let game = Game {
            player: Player {
                health: 3,
                cursor: 1,
            },
            other: Player::default(),
        };
        let mut snapshot = sg::Snapshot::new(sg::Codec::Json);
        game.capture_state(&mut snapshot).unwrap();
        assert_eq!(snapshot.ids().collect::<Vec<_>>(), ["hero", "player"]);
        let mut back = Game::default();
        assert!(back.restore_state(&snapshot).unwrap().is_exact());
        assert_eq!(back.player.health, 3);
        let _: PlayerMemento = back.player.create_memento();

        let timed = Timed {
            clock: Clock { turn: 9 },
        };
        timed.capture_state(&mut snapshot).unwrap();
        let mut clock = Clock::default();
        snapshot.restore("clock", &mut clock).unwrap();
        assert_eq!(clock, Clock { turn: 9 });
        let _: ClockMemento = clock.create_memento();
    }
}
