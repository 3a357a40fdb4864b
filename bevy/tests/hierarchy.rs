//! The hierarchy's two cases beside links between saved entities: a saved child of an unsaved
//! parent keeps its link (the parent is given a `SaveId`, and a load links the child to the
//! entity carrying it, saved or not); and a parent's saved children keep their places among
//! its unsaved ones, in a load in place and after an incremental save.

mod common;

use bevy_ecs::prelude::*;
use common::*;
use savegame::SlotId;
use savegame_bevy::{Loaded, SaveId, Saveable};

const SLOT: SlotId = SlotId::Numbered(4);

fn save(app: &mut bevy_app::App, incremental: bool) {
    save_slot(app, SLOT, incremental);
}

fn load(app: &mut bevy_app::App) {
    load_slot(app, SLOT);
    assert_eq!(drain::<Loaded>(app).len(), 1);
}

/// A child's name: its label, or `?`.
fn names(world: &World, parent: Entity) -> Vec<String> {
    world
        .get::<Children>(parent)
        .map(|c| {
            c.iter()
                .map(|c| world.get::<Label>(c).map_or("?".into(), |l| l.0.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn labelled(world: &mut World, label: &str) -> Entity {
    world
        .query::<(Entity, &Label)>()
        .iter(world)
        .find(|(_, l)| l.0 == label)
        .map(|(e, _)| e)
        .unwrap()
}

#[test]
fn a_saved_child_of_an_unsaved_parent_keeps_its_link() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    // An unsaved root (a level's scene root, say) without an id, with saved children.
    let root = world.spawn(Label("root".into())).id();
    let a = world
        .spawn((Saveable, Label("a".into()), ChildOf(root)))
        .id();
    world.spawn((Saveable, Label("b".into()), ChildOf(root)));
    save(&mut app, false);
    let world = app.world_mut();
    // The root was given an id, to save the link, and stays unsaved.
    let root_id = world.get::<SaveId>(root).copied().unwrap();
    assert!(world.get::<Saveable>(root).is_none());

    // In place: a despawned child comes back under the root.
    world.despawn(a);
    load(&mut app);
    assert_eq!(names(app.world(), root), ["a", "b"]);

    // In a new session, the game spawns its root again with the same id: the saved children
    // hang from it after the load.
    let mut next = common::app(dir.path());
    let root = next.world_mut().spawn((Label("root".into()), root_id)).id();
    load(&mut next);
    assert_eq!(names(next.world(), root), ["a", "b"]);
    let world = next.world_mut();
    let a = labelled(world, "a");
    assert_eq!(world.get::<ChildOf>(a).map(ChildOf::parent), Some(root));

    // Without it, the children load without a parent (and the load says nothing is wrong).
    let mut bare = common::app(dir.path());
    load(&mut bare);
    let world = bare.world_mut();
    let a = labelled(world, "a");
    assert!(world.get::<ChildOf>(a).is_none());
}

#[test]
fn saved_children_moved_under_a_new_unsaved_parent_keep_the_link_after_a_delta() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    let a = world.spawn((Saveable, Label("a".into()))).id();
    let b = world.spawn((Saveable, Label("b".into()))).id();
    world.spawn((Saveable, Label("c".into())));
    save(&mut app, true);
    // A new unsaved root without an id; two saved children move under it, so one delta
    // writes two records naming a parent that has no id yet.
    let world = app.world_mut();
    let root = world.spawn(Label("root".into())).id();
    world.entity_mut(b).insert(ChildOf(root));
    world.entity_mut(a).insert(ChildOf(root));
    save(&mut app, true);
    let world = app.world_mut();
    let root_id = world.get::<SaveId>(root).copied().unwrap();
    assert!(world.get::<Saveable>(root).is_none());
    assert_eq!(names(world, root), ["b", "a"]);

    // The root comes back in a new session with its id: both children hang from it, in
    // their order.
    let mut next = common::app(dir.path());
    let root = next.world_mut().spawn((Label("root".into()), root_id)).id();
    load(&mut next);
    assert_eq!(names(next.world(), root), ["b", "a"]);
    let world = next.world_mut();
    let c = labelled(world, "c");
    assert!(world.get::<ChildOf>(c).is_none());
}

/// A saved parent with children saved and unsaved, in this order: `u1, s1, u2, s2, u3`.
fn family(world: &mut World) -> Entity {
    let parent = world.spawn((Saveable, Label("parent".into()))).id();
    for (label, saved) in [
        ("u1", false),
        ("s1", true),
        ("u2", false),
        ("s2", true),
        ("u3", false),
    ] {
        let mut child = world.spawn((Label(label.into()), ChildOf(parent)));
        if saved {
            child.insert(Saveable);
        }
    }
    parent
}

#[test]
fn saved_children_keep_their_places_among_unsaved_ones() {
    let order = ["u1", "s1", "u2", "s2", "u3"];
    for incremental in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        let parent = family(app.world_mut());
        // An unsaved parent with the same family.
        let unsaved = app.world_mut().spawn(Label("unsaved".into())).id();
        let world = app.world_mut();
        for (label, saved) in [("x1", true), ("y1", false), ("x2", true)] {
            let mut child = world.spawn((Label(label.into()), ChildOf(unsaved)));
            if saved {
                child.insert(Saveable);
            }
        }
        save(&mut app, incremental);
        if incremental {
            // The same family again, as a delta: the saved children were moved since.
            let world = app.world_mut();
            let s1 = labelled(world, "s1");
            world.entity_mut(parent).detach_child(s1);
            world.entity_mut(parent).add_child(s1);
            save(&mut app, true);
            assert_eq!(names(app.world(), parent), ["u1", "u2", "s2", "u3", "s1"]);
            let world = app.world_mut();
            world.entity_mut(parent).detach_child(s1);
            world.entity_mut(parent).insert_child(1, s1);
            save(&mut app, true);
        }
        assert_eq!(names(app.world(), parent), order);

        // The game reorders the children, and despawns a saved one: the load puts them back.
        let world = app.world_mut();
        world
            .get_mut::<Children>(parent)
            .unwrap()
            .sort_by_key(|c| std::cmp::Reverse(*c));
        let s2 = labelled(world, "s2");
        world.despawn(s2);
        let x1 = labelled(world, "x1");
        world.entity_mut(unsaved).detach_child(x1);
        world.entity_mut(unsaved).add_child(x1);
        load(&mut app);
        assert_eq!(
            names(app.world(), parent),
            order,
            "incremental: {incremental}"
        );
        assert_eq!(
            names(app.world(), unsaved),
            ["x1", "y1", "x2"],
            "incremental: {incremental}"
        );

        // In a new app, with no unsaved children, the saved ones keep their order.
        let mut fresh = common::app(dir.path());
        load(&mut fresh);
        let world = fresh.world_mut();
        let parent = labelled(world, "parent");
        assert_eq!(names(world, parent), ["s1", "s2"]);
    }
}

/// A parent without a `Children` list (a link made with Bevy's relationship hooks skipped, as
/// a scene or a clone may): the full save still finds it through its saved child, and gives it
/// an id as it gives any unsaved parent, though it has no list to copy.
#[test]
fn a_parent_whose_list_the_hooks_never_made_is_still_found() {
    use bevy_ecs::relationship::RelationshipHookMode;
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let world = app.world_mut();
    let parent = world.spawn_empty().id();
    let child = world.spawn((Saveable, Label("child".into()))).id();
    world
        .entity_mut(child)
        .insert_with_relationship_hook_mode(ChildOf(parent), RelationshipHookMode::Skip);
    assert!(world.get::<Children>(parent).is_none(), "no list");
    save(&mut app, false);
    assert!(
        app.world().get::<SaveId>(parent).is_some(),
        "the parent was found and given an id"
    );
}
